"""Connection and configuration errors name themselves: a bad base URL is refused up front
(exit 2), and a server that cannot be reached is named in the spawn's error, not hidden
behind what the role failed to do."""

from __future__ import annotations

import asyncio
import socket
from pathlib import Path

import pydantic_ai.models
import pytest
from agentkit import make_repo, runtime

from pipeline.agents.models import describe_failure
from pipeline.agents.resolve import check_base_url
from pipeline.agents.retry import RetryPolicy
from pipeline.agents.review import review_once
from pipeline.errors import InputError
from pipeline.settings import Limits


def _closed_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


async def _no_wait(_: float) -> None:
    return None


def test_an_unreachable_server_is_named_in_the_spawn_error(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(pydantic_ai.models, "ALLOW_MODEL_REQUESTS", True)  # loopback only, nothing listens
    d = make_repo(tmp_path)
    url = f"http://user:SECRET@127.0.0.1:{_closed_port()}/v1"
    rt = runtime(
        d,
        model_specs={"comprehension-review": "openai:local"},
        base_url=url,
        policy=RetryPolicy(sleep=_no_wait),
    )
    run = asyncio.run(review_once(rt, "comprehension-review", d, Limits()))
    result = run.results[0]
    assert result.status == "inconclusive" and result.error is not None
    assert result.error.startswith("connection error: cannot reach http://127.0.0.1:")
    assert "openai:local" in result.error and "SECRET" not in result.error


@pytest.mark.parametrize("url", ["localhost:8000", "ftp://host/v1", "http://", "http://host:port/v1", "/v1"])
def test_a_base_url_that_is_not_http_is_refused(url: str) -> None:
    with pytest.raises(InputError) as caught:
        check_base_url(url)
    assert caught.value.hint and "--base-url" in caught.value.message


def test_other_failures_keep_their_own_words() -> None:
    assert describe_failure(TimeoutError("slow"), "openai:x", None).startswith(
        "timed out waiting for openai:x"
    )
    assert describe_failure(ValueError("odd"), "openai:x", None) == "ValueError: odd"
