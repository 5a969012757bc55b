"""A recorded model as a test: replay a cassette of real requests and hand-written answers.

A cassette (tests/cassettes/NAME/) holds ``project/`` (the repository the runs worked on),
``runs.json`` (the commands that ran, and what each ended with) and ``exchanges/NNNN.json``:
each request the runs sent to an OpenAI-compatible endpoint and the answer it got, numbered
in the order they arrived. The replay server answers a request with the recorded answer of
the identical recorded request (compared after :func:`normalise`), in whatever order the
requests come; a request that matches none is a mismatch, reported against the nearest
recorded request with the first place they differ.

To record one, run the commands against a relay: a loopback endpoint that saves each
request as DIR/in/NNNN.json and answers it with the assistant message in DIR/out/NNNN.json
(``{"content": ...}`` or ``{"tool_calls": [{"name": ..., "arguments": {...}}]}``), written by
whoever plays the model. Then ``python tests/cassette.py import DIR tests/cassettes/NAME``
turns the relay's directory into exchanges (docs/agents.md, "The recorded run"); while
recording, ``python tests/cassette.py draft DIR tests/cassettes/NAME`` drafts each waiting
request's answer from the nearest recorded one, for that person to check.
"""

from __future__ import annotations

import argparse
import json
import re
import shutil
import threading
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

STAMP_RE = re.compile(r"<!-- workflow-sha: [0-9a-f]{40} -->")
STAMP = "<!-- workflow-sha: (the workflow's digest) -->"


def normalise(value: Any) -> Any:
    """A request as compared: the workflow-sha stamp a design carries on line 1 is a digest of
    every shipped params file, so it is left out (a prompt, tool or schema change still shows,
    in the text a model reads)."""
    if isinstance(value, dict):
        return {k: normalise(v) for k, v in value.items()}
    if isinstance(value, list):
        return [normalise(v) for v in value]
    if isinstance(value, str):
        return STAMP_RE.sub(STAMP, value)
    return value


def response(number: int, request: dict[str, Any], answer: dict[str, Any], size: int) -> dict[str, Any]:
    """The chat completion for ``answer``, built as the relay builds it (its tool-call ids name
    the request's number, so the conversations that follow are the recorded ones)."""
    message: dict[str, Any] = {"role": "assistant", "content": answer.get("content")}
    finish = "stop"
    if answer.get("tool_calls"):
        message["tool_calls"] = [
            {
                "id": f"call_{number}_{i}",
                "type": "function",
                "function": {"name": call["name"], "arguments": json.dumps(call.get("arguments", {}))},
            }
            for i, call in enumerate(answer["tool_calls"])
        ]
        finish = "tool_calls"
    return {
        "id": f"relay-{number}",
        "object": "chat.completion",
        "created": 0,
        "model": request.get("model", "relay"),
        "choices": [{"index": 0, "message": message, "finish_reason": finish}],
        "usage": {"prompt_tokens": size // 4, "completion_tokens": 1, "total_tokens": size // 4 + 1},
    }


@dataclass(frozen=True, slots=True)
class Exchange:
    number: int
    request: dict[str, Any]
    answer: dict[str, Any]

    @property
    def role(self) -> str:
        """The role's first instruction line: who sent it."""
        system = next((str(m.get("content")) for m in self.request["messages"] if m["role"] == "system"), "")
        return system.splitlines()[0] if system else "?"


def load(cassette: Path) -> list[Exchange]:
    out = []
    for path in sorted((cassette / "exchanges").glob("*.json")):
        data = json.loads(path.read_text(encoding="utf-8"))
        out.append(Exchange(int(data["number"]), data["request"], data["answer"]))
    return out


def first_difference(recorded: Any, sent: Any, where: str = "") -> str | None:
    """The first place two requests differ, as a JSON path with both values, or None."""
    if isinstance(recorded, dict) and isinstance(sent, dict):
        for key in [*recorded, *(k for k in sent if k not in recorded)]:
            if key not in sent or key not in recorded:
                return (
                    f"{where}.{key}: {'missing from the sent request' if key not in sent else 'not recorded'}"
                )
            found = first_difference(recorded[key], sent[key], f"{where}.{key}")
            if found:
                return found
        return None
    if isinstance(recorded, list) and isinstance(sent, list):
        for i, (a, b) in enumerate(zip(recorded, sent, strict=False)):
            found = first_difference(a, b, f"{where}[{i}]")
            if found:
                return found
        if len(recorded) != len(sent):
            return f"{where}: {len(recorded)} items recorded, {len(sent)} sent"
        return None
    if recorded == sent:
        return None
    if isinstance(recorded, str) and isinstance(sent, str):
        at = next((i for i, (a, b) in enumerate(zip(recorded, sent, strict=False)) if a != b), None)
        at = min(len(recorded), len(sent)) if at is None else at
        return (
            f"{where}, character {at}: recorded {recorded[max(0, at - 40) : at + 60]!r}, "
            f"sent {sent[max(0, at - 40) : at + 60]!r}"
        )
    return f"{where}: recorded {recorded!r}, sent {sent!r}"


@dataclass(slots=True)
class Replay:
    """Answers each request with the recorded answer to the identical recorded request."""

    exchanges: list[Exchange]
    sent: list[dict[str, Any]] = field(default_factory=list)
    used: list[int] = field(default_factory=list)
    mismatches: list[str] = field(default_factory=list)
    lock: threading.Lock = field(default_factory=threading.Lock)

    def answer(self, body: bytes) -> dict[str, Any] | None:
        request = json.loads(body)
        wanted = normalise(request)
        with self.lock:
            self.sent.append(request)
            for exchange in self.exchanges:
                if normalise(exchange.request) == wanted:
                    self.used.append(exchange.number)
                    return response(exchange.number, request, exchange.answer, len(body))
            self.mismatches.append(self.explain(wanted, len(self.sent)))
        return None

    def explain(self, wanted: dict[str, Any], order: int) -> str:
        """Name the nearest recorded request and the first place the sent one differs from it."""
        found = nearest(self.exchanges, wanted)
        where = first_difference(normalise(found.request), wanted)
        return (
            f"request {order} of this run matches no recorded request; the nearest is recorded "
            f"request {found.number:04d} ({found.role!r}), and they differ at {where}. A prompt, "
            "tool or output schema changed: re-record the cassette (docs/agents.md, 'The recorded run')"
        )


CALL_ID_RE = re.compile(r"^call_\d+_\d+$")


def blind(value: Any) -> Any:
    """A normalised request with its tool-call ids left out: the relay numbers them after the
    request that made the call, so they differ whenever concurrent spawns arrive in another order."""
    if isinstance(value, dict):
        return {
            k: "call_*" if k in ("id", "tool_call_id") and CALL_ID_RE.match(str(v)) else blind(v)
            for k, v in value.items()
        }
    if isinstance(value, list):
        return [blind(v) for v in value]
    return value


def _lines(request: dict[str, Any]) -> set[str]:
    """The lines of a conversation: each message's text, line by line, and its tool calls."""
    out = set()
    for i, message in enumerate(request["messages"]):
        for line in str(message.get("content")).splitlines():
            out.add(f"{message['role']}: {line}")
        out.update(f"{i}: {json.dumps(call, sort_keys=True)}" for call in message.get("tool_calls") or [])
    return out


def nearest(exchanges: list[Exchange], wanted: dict[str, Any]) -> Exchange:
    """The recorded request nearest to ``wanted`` (normalised): the same role (the first line of
    its instructions, so a changed prompt still finds its role), then the most messages
    identical at the same places, then the most lines of the conversation shared (Jaccard);
    tool-call ids are left out of the comparison."""
    role = Exchange(0, wanted, {}).role
    wanted = blind(wanted)
    lines = _lines(wanted)

    def score(exchange: Exchange) -> tuple[bool, int, float]:
        recorded = blind(normalise(exchange.request))
        same = sum(a == b for a, b in zip(recorded["messages"], wanted["messages"], strict=False))
        theirs = _lines(recorded)
        return (exchange.role == role, same, len(lines & theirs) / max(1, len(lines | theirs)))

    return max(exchanges, key=score)


class ReplayServer:
    """The replay on 127.0.0.1, as an OpenAI-compatible chat-completions endpoint."""

    def __init__(self, replay: Replay) -> None:
        self.replay = replay
        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), _handler(replay))
        self.thread = threading.Thread(target=self.httpd.serve_forever, daemon=True)

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self.httpd.server_address[1]}/v1"

    def __enter__(self) -> ReplayServer:
        self.thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.httpd.shutdown()
        self.httpd.server_close()


def _handler(replay: Replay) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        def do_POST(self) -> None:
            body = self.rfile.read(int(self.headers["Content-Length"]))
            found = replay.answer(body)
            status, payload = (200, found) if found is not None else (400, {"error": replay.mismatches[-1]})
            data = json.dumps(payload).encode()
            self.send_response(status)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)

        def log_message(self, *args: Any) -> None:
            pass

    return Handler


def import_relay(relay: Path, cassette: Path) -> int:
    """Turn a relay's directory (in/NNNN.json, out/NNNN.json) into the cassette's exchanges."""
    target = cassette / "exchanges"
    if target.exists():
        shutil.rmtree(target)
    target.mkdir(parents=True)
    count = 0
    for request_path in sorted((relay / "in").glob("*.json")):
        answer_path = relay / "out" / request_path.name
        if not answer_path.is_file():
            raise SystemExit(f"{request_path.name} has no answer in {relay / 'out'}")
        number = int(request_path.stem)
        exchange = {
            "number": number,
            "request": json.loads(request_path.read_text(encoding="utf-8")),
            "answer": json.loads(answer_path.read_text(encoding="utf-8")),
        }
        (target / request_path.name).write_text(
            json.dumps(exchange, indent=1, ensure_ascii=False) + "\n", encoding="utf-8"
        )
        count += 1
    return count


def draft_note(request: str, found: Exchange, wanted: dict[str, Any]) -> str:
    """One line: the recorded request nearest to ``wanted`` and where the two differ (tool-call
    ids aside), first and, when several messages differ, in the last of them, which is most
    often the tool result the answer has to follow."""
    recorded = blind(normalise(found.request))
    head = f"{request}: recorded {found.number:04d} ({found.role!r}), "
    where = first_difference(recorded, wanted)
    if where is None:
        return head + "identical"
    theirs, ours = recorded["messages"], wanted["messages"]
    differing = [i for i in range(max(len(theirs), len(ours))) if theirs[i : i + 1] != ours[i : i + 1]]
    note = f"{len(ours) - len([i for i in differing if i < len(ours)])} of {len(ours)} messages identical"
    note += f" (differing: {', '.join(map(str, differing))})" if differing else ""
    note += f"; first difference at {where}"
    if len(differing) > 1 and differing[-1] < min(len(theirs), len(ours)):
        last = differing[-1]
        note += f"; last at {first_difference(theirs[last], ours[last], f'.messages[{last}]')}"
    return head + note


def draft(relay: Path, cassette: Path) -> list[str]:
    """For each request in RELAY/in/ that has no answer in RELAY/out/ nor a draft yet, write the
    answer recorded for the nearest recorded request to RELAY/draft/NNNN.json (the shape a relay
    answer has, to copy into out/ once checked) and :func:`draft_note` to RELAY/draft/NNNN.txt.
    It never writes to out/: a person reads each request and its draft, and answers it.
    Returns the notes written."""
    if not (relay / "in").is_dir():
        raise SystemExit(f"{relay} has no in/ directory: give the directory the relay was started with")
    exchanges = load(cassette)
    if not exchanges:
        raise SystemExit(f"{cassette / 'exchanges'} holds no recorded exchange")
    drafts = relay / "draft"
    drafts.mkdir(exist_ok=True)
    notes = []
    for request_path in sorted((relay / "in").glob("*.json")):
        name = request_path.name
        if (relay / "out" / name).exists() or (drafts / name).exists():
            continue
        wanted = blind(normalise(json.loads(request_path.read_text(encoding="utf-8"))))
        found = nearest(exchanges, wanted)
        note = draft_note(request_path.stem, found, wanted)
        answer = json.dumps(found.answer, indent=1, ensure_ascii=False) + "\n"
        (drafts / name).write_text(answer, encoding="utf-8")
        (drafts / f"{request_path.stem}.txt").write_text(note + "\n", encoding="utf-8")
        notes.append(note)
    return notes


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    sub = parser.add_subparsers(dest="command", required=True)
    imported = sub.add_parser("import", help="turn a relay's directory into a cassette's exchanges")
    drafted = sub.add_parser(
        "draft", help="draft each unanswered relay request from the nearest recorded one (never answers)"
    )
    for command in (imported, drafted):
        command.add_argument("relay", type=Path)
        command.add_argument("cassette", type=Path)
    args = parser.parse_args()
    if args.command == "draft":
        for note in draft(args.relay, args.cassette):
            print(note)
        return
    print(f"{import_relay(args.relay, args.cassette)} exchanges written to {args.cassette / 'exchanges'}")


if __name__ == "__main__":
    main()
