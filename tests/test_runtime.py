"""The runtime: scripted roles, wire formats, a real local server, retries, INCONCLUSIVE, cache, budget."""

from __future__ import annotations

import asyncio
import json
import threading
from collections.abc import Coroutine
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any, ClassVar

import httpx
import httpx2
import pytest
import respx
from agentkit import LegacyBridge, anthropic_message, chat_completion, make_repo, runtime, scripted, send_json
from pydantic_ai.exceptions import ModelHTTPError
from pydantic_ai.models.function import AgentInfo, FunctionModel

from pipeline.agents.cache import open_cache
from pipeline.agents.models import build_model
from pipeline.agents.retry import RetryPolicy
from pipeline.agents.review import review_once
from pipeline.agents.usage import Budget, BudgetExceeded
from pipeline.formats.design_dir import DesignDir
from pipeline.settings import Limits

PASS = {"verdict": "PASS", "findings": []}
FINDING = {
    "severity": "should-fix",
    "section": "Overview",
    "quote": "robust",
    "rule": "hs-ai-tell",
    "message": "AI-tell word",
    "suggested_fix": "say reliable",
    "decision_shaped": False,
}


def review(d: DesignDir, rt: Any, role: str, **kw: Any) -> Any:
    return asyncio.run(review_once(rt, role, d, Limits(), **kw))


@pytest.mark.parametrize(
    "role", ["readability-auditor", "absorption-check", "comprehension-review", "adversarial-review"]
)
def test_each_review_role_through_a_scripted_model(tmp_path: Path, role: str) -> None:
    d = make_repo(tmp_path)
    rt = runtime(d, model_overrides={role: scripted({"verdict": "NEEDS REVISION", "findings": [FINDING]})})
    run = review(d, rt, role)
    assert [r.status for r in run.results] == ["ok"]
    assert run.results[0].review is not None and run.results[0].review.findings[0].rule == "hs-ai-tell"
    params = json.loads(run.results[0].params_path.read_text())
    assert params["role"] == role and "run_id" not in params  # nothing run-specific is sent
    if rt.roles[role].cold:
        assert "research_log_path" not in params


def test_author_and_fidelity_through_scripted_models(tmp_path: Path) -> None:
    d = make_repo(tmp_path)
    out = str(d.final.relative_to(d.repo_root))

    def author(messages: Any, info: AgentInfo) -> Any:
        from pydantic_ai.messages import ModelResponse, ToolCallPart

        if len(messages) == 1:
            return ModelResponse(
                parts=[ToolCallPart("write", {"path": out, "content": "# Final\n"}, tool_call_id="w")]
            )
        return ModelResponse(
            parts=[
                ToolCallPart(
                    info.output_tools[0].name, {"summary": "wrote it", "output_path": out}, tool_call_id="o"
                )
            ]
        )

    rt = runtime(
        d, model_overrides={"design-author": FunctionModel(author), "fidelity-check": scripted(PASS)}
    )
    run = review(d, rt, "design-author", draft=d.final)
    assert run.results[0].status == "ok" and d.final.read_text() == "# Final\n"
    assert review(d, rt, "fidelity-check").results[0].review.verdict == "PASS"


def test_pass_with_a_should_fix_is_malformed_and_inconclusive_after_one_rerun(tmp_path: Path) -> None:
    d = make_repo(tmp_path)
    calls: list[int] = []
    rt = runtime(
        d,
        model_overrides={
            "comprehension-review": scripted({"verdict": "PASS", "findings": [FINDING]}, calls=calls)
        },
    )
    result = review(d, rt, "comprehension-review").results[0]
    assert result.status == "inconclusive" and result.attempts == 2
    assert "malformed" in (result.error or "") or "validation" in (result.error or "").lower()
    assert len(calls) == 4  # two attempts of two requests each: the re-run is not answered from the cache


def test_a_timed_out_role_is_rerun_once_then_inconclusive(tmp_path: Path) -> None:
    d = make_repo(tmp_path)

    async def slow(messages: Any, info: AgentInfo) -> Any:
        await asyncio.sleep(5)

    rt = runtime(d, timeout=0.2, model_overrides={"readability-auditor": FunctionModel(slow)})
    result = review(d, rt, "readability-auditor").results[0]
    assert result.status == "inconclusive" and result.attempts == 2


def test_cache_hit_on_identical_request_and_miss_when_an_input_changes(tmp_path: Path) -> None:
    d = make_repo(tmp_path)
    calls: list[int] = []
    draft = str(d.design.relative_to(d.repo_root))
    model = scripted(PASS, reads=[draft], calls=calls)
    cache = open_cache(tmp_path / "cache")

    def run_once() -> Any:
        rt = runtime(d, cache=cache, model_overrides={"absorption-check": model})
        return review(d, rt, "absorption-check").results[0]  # a new review each time: no run id

    first = run_once()
    assert len(calls) == 3 and first.usage.calls == 3 and first.usage.cache_hits == 0
    again = run_once()
    assert len(calls) == 3 and again.usage.calls == 0 and again.usage.cache_hits == 3
    assert again.usage.total_tokens == 0
    d.design.write_text(d.design.read_text() + "\nA new paragraph.\n")
    changed = run_once()
    # The first two requests are unchanged and answered from the cache; the one that carries the
    # changed draft is new and paid for.
    assert len(calls) == 4
    assert changed.usage.cache_hits == 2 and changed.usage.calls == 1


def test_transient_errors_are_retried_with_retry_after(tmp_path: Path) -> None:
    d = make_repo(tmp_path)
    failures = [ModelHTTPError(429, "m", body=None, headers={"retry-after": "7"}), ModelHTTPError(500, "m")]
    slept: list[float] = []
    inner = scripted(PASS)

    class Flaky(FunctionModel):
        async def request(self, *args: Any, **kwargs: Any) -> Any:
            if failures:
                raise failures.pop(0)
            return await super().request(*args, **kwargs)

    async def sleep(seconds: float) -> None:
        slept.append(seconds)

    assert inner.function is not None
    flaky = Flaky(inner.function, model_name="flaky")
    rt = runtime(
        d,
        policy=RetryPolicy(attempts=4, base=0.01, max_wait=0.05, sleep=sleep),
        model_overrides={"comprehension-review": flaky},
    )
    result = review(d, rt, "comprehension-review").results[0]
    assert result.status == "ok" and slept[0] == 7.0 and 0 <= slept[1] <= 0.05 and len(slept) == 2


def test_a_non_transient_error_is_not_retried(tmp_path: Path) -> None:
    d = make_repo(tmp_path)
    attempts: list[int] = []

    class Broken(FunctionModel):
        async def request(self, *args: Any, **kwargs: Any) -> Any:
            attempts.append(1)
            raise ModelHTTPError(400, "m", body="bad request")

    function = scripted(PASS).function
    assert function is not None
    rt = runtime(d, model_overrides={"comprehension-review": Broken(function)})
    result = review(d, rt, "comprehension-review").results[0]
    assert result.status == "inconclusive" and len(attempts) == 2  # one per attempt, no retries


def test_token_budget_stops_cleanly(tmp_path: Path) -> None:
    d = make_repo(tmp_path)
    rt = runtime(d, budget=Budget(max_tokens=60), model_overrides={"comprehension-review": scripted(PASS)})
    with pytest.raises(BudgetExceeded) as info:
        review(d, rt, "comprehension-review")
    assert info.value.exit_code == 4


@pytest.mark.filterwarnings("ignore:.*httpx.AsyncClient")
def test_openai_chat_wire_format_through_respx(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    d = make_repo(tmp_path)
    import pydantic_ai.models

    monkeypatch.setattr(pydantic_ai.models, "ALLOW_MODEL_REQUESTS", True)  # respx answers every request
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test-key-0000000000")
    sent: list[dict[str, Any]] = []
    with respx.mock(assert_all_called=True) as mock:

        def answer(request: httpx.Request) -> httpx.Response:
            body = json.loads(request.content)
            sent.append(body)
            if len(sent) == 1:
                prompt = body["messages"][-1]["content"]
                path = prompt.rsplit("Params file:", 1)[1].strip()
                return httpx.Response(200, json=chat_completion("read", {"path": path}, "call_1"))
            return httpx.Response(200, json=chat_completion("final_result", PASS, "call_2"))

        mock.post("https://api.openai.com/v1/chat/completions").mock(side_effect=answer)
        model = build_model("openai-chat:gpt-test", http_client=httpx.AsyncClient())
        rt = runtime(d, model_overrides={"comprehension-review": model})
        result = review(d, rt, "comprehension-review").results[0]
    assert result.status == "ok" and result.review is not None and result.review.verdict == "PASS"
    assert [t["function"]["name"] for t in sent[0]["tools"]] == ["read", "grep", "final_result"]
    assert (
        sent[1]["messages"][-1]["role"] == "tool"
        and "comprehension-review" in sent[1]["messages"][-1]["content"]
    )
    assert result.usage.input_tokens == 200 and result.usage.output_tokens == 40


def test_anthropic_wire_format_through_respx(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    d = make_repo(tmp_path)
    import pydantic_ai.models

    monkeypatch.setattr(pydantic_ai.models, "ALLOW_MODEL_REQUESTS", True)  # respx answers every request
    monkeypatch.setenv("ANTHROPIC_API_KEY", "sk-ant-test-000000000000")
    sent: list[dict[str, Any]] = []
    with respx.mock(assert_all_called=True) as mock:

        def answer(request: httpx.Request) -> httpx.Response:
            body = json.loads(request.content)
            sent.append(body)
            if len(sent) == 1:
                text = body["messages"][0]["content"]
                text = text if isinstance(text, str) else text[0]["text"]
                path = text.rsplit("Params file:", 1)[1].strip()
                return httpx.Response(200, json=anthropic_message("read", {"path": path}, "toolu_1"))
            return httpx.Response(200, json=anthropic_message("final_result", PASS, "toolu_2"))

        mock.post("https://api.anthropic.com/v1/messages").mock(side_effect=answer)
        client = httpx2.AsyncClient(transport=LegacyBridge(httpx.AsyncClient()))
        model = build_model("anthropic:claude-test", http_client=client)
        rt = runtime(d, model_overrides={"readability-auditor": model})
        result = review(d, rt, "readability-auditor").results[0]
    assert result.status == "ok" and result.review is not None
    assert sent[0]["system"] and "readability auditor" in json.dumps(sent[0]["system"])
    # Cache breakpoints: the instructions and the tools (shared by every spawn of the role), and
    # one that moves forward with the conversation (what the spawn read is cached for its next turn).
    assert "cache_control" in json.dumps(sent[0]["system"][-1])
    assert "cache_control" in sent[0]["tools"][-1]
    assert "cache_control" in sent[1]
    assert {t["name"] for t in sent[0]["tools"]} == {"read", "grep", "final_result"}


class _Chat(BaseHTTPRequestHandler):
    requests: ClassVar[list[dict[str, Any]]] = []

    def do_POST(self) -> None:
        body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
        type(self).requests.append(
            {"path": self.path, "auth": self.headers.get("Authorization"), "body": body}
        )
        if len(type(self).requests) == 1:
            path = body["messages"][-1]["content"].rsplit("Params file:", 1)[1].strip()
            payload = chat_completion("read", {"path": path}, "c1")
        else:
            payload = chat_completion(
                "final_result", {"verdict": "NEEDS REVISION", "findings": [FINDING]}, "c2"
            )
        send_json(self, 200, payload)

    def log_message(self, *args: Any) -> None:
        pass


def test_openai_compatible_server_on_loopback_through_the_default_stack(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import pydantic_ai.models

    d = make_repo(tmp_path)
    _Chat.requests = []
    server = ThreadingHTTPServer(("127.0.0.1", 0), _Chat)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    monkeypatch.setattr(pydantic_ai.models, "ALLOW_MODEL_REQUESTS", True)
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    try:
        base = f"http://127.0.0.1:{server.server_address[1]}/v1"
        rt = runtime(d, model_specs={"readability-auditor": "openai:local-model"}, base_url=base)
        result = review(d, rt, "readability-auditor").results[0]
    finally:
        server.shutdown()
    assert result.status == "ok" and result.review is not None and result.review.verdict == "NEEDS REVISION"
    assert [r["path"] for r in _Chat.requests] == ["/v1/chat/completions"] * 2
    assert _Chat.requests[0]["body"]["model"] == "local-model"


def _held_model(outcomes: list[str]) -> tuple[FunctionModel, asyncio.Event, asyncio.Event, list[int]]:
    """A model whose answer waits for ``release``; each call answers with the next outcome
    ("ok", or "fail" for an HTTP 400)."""
    entered, release, calls = asyncio.Event(), asyncio.Event(), []

    async def answer(messages: list[Any], info: AgentInfo) -> Any:
        from pydantic_ai.messages import ModelResponse, TextPart

        calls.append(1)
        entered.set()
        await release.wait()
        if outcomes[len(calls) - 1] == "fail":
            raise ModelHTTPError(400, "m", body="bad")
        return ModelResponse(parts=[TextPart("the answer")])

    return FunctionModel(answer, model_name="held"), entered, release, calls


@pytest.mark.parametrize("first", ["ok", "fail"])
def test_an_identical_request_in_flight_is_asked_once(tmp_path: Path, first: str) -> None:
    """The first turn of every spawn in a fan-out is the same request: while it is being asked,
    the others wait for its answer, each getting a copy of its own. If that ask fails, one of
    the others asks and the rest wait for it."""
    from pydantic_ai.messages import ModelRequest
    from pydantic_ai.models import ModelRequestParameters

    from pipeline.agents.cache import CachedModel

    async def scenario() -> list[Any]:
        model, entered, release, calls = _held_model([first, "ok", "ok"])
        cached = CachedModel(model, open_cache(tmp_path / "cache"))
        messages: list[Any] = [ModelRequest.user_text_prompt("the same prompt")]

        def ask() -> Coroutine[Any, Any, Any]:
            return cached.request(messages, None, ModelRequestParameters())

        leader = asyncio.ensure_future(ask())
        await entered.wait()
        followers = [asyncio.ensure_future(ask()) for _ in range(2)]
        for _ in range(3):  # the followers run until they wait on the leader's answer
            await asyncio.sleep(0)
        assert len(calls) == 1
        release.set()
        results = await asyncio.gather(leader, *followers, return_exceptions=True)
        return [len(calls), *results]

    count, leader, *followers = asyncio.run(scenario())
    if first == "ok":
        assert count == 1 and all(f.parts == leader.parts for f in followers)
        assert followers[0] is not followers[1] and followers[0] is not leader
    else:
        assert count == 2 and isinstance(leader, ModelHTTPError)
        assert all(f.parts[0].content == "the answer" for f in followers)


def test_identical_requests_of_two_runs_in_one_process_are_asked_once(tmp_path: Path) -> None:
    """Two runs of a batch hold a model each (their own runtimes) but share the batch's one
    registry of requests being asked: the first turn of a role, the same in every directory,
    is sent once while it is in flight."""
    from pydantic_ai.messages import ModelRequest
    from pydantic_ai.models import ModelRequestParameters

    from pipeline.agents.cache import CachedModel, InFlight

    async def scenario(shared: bool) -> int:
        model, entered, release, calls = _held_model(["ok", "ok"])
        registry = InFlight()
        runs = [
            CachedModel(
                model, open_cache(tmp_path / f"cache-{shared}"), inflight=registry if shared else None
            )
            for _ in range(2)
        ]
        messages: list[Any] = [ModelRequest.user_text_prompt("the first turn of a role")]
        first = asyncio.ensure_future(runs[0].request(messages, None, ModelRequestParameters()))
        await entered.wait()
        second = asyncio.ensure_future(runs[1].request(messages, None, ModelRequestParameters()))
        for _ in range(3):  # with the registry, the second waits on the first's answer
            await asyncio.sleep(0)
        while not shared and len(calls) < 2:  # without, it reads the cache (in a thread),
            await asyncio.sleep(0.001)  # misses and asks: the evidence is its call
        release.set()
        await asyncio.gather(first, second)
        return len(calls)

    assert asyncio.run(scenario(shared=True)) == 1
    assert asyncio.run(scenario(shared=False)) == 2  # the registry is what makes it once


def test_a_batch_hands_every_run_one_registry_of_requests_in_flight(tmp_path: Path) -> None:
    from batchkit import batch_repo, run_batch

    repo = batch_repo(tmp_path, ["a", "b", "c"])
    seen: list[int] = []
    batch = run_batch(
        repo, ["a", "b", "c"], configure=lambda deps: seen.append(id(deps.runtime.inflight)), jobs=3
    )
    assert [r.outcome for r in batch.rows] == ["PASS"] * 3
    assert len(seen) == 3 and len(set(seen)) == 1
