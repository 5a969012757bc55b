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
whoever plays the model. ``python tests/cassette.py record URL WORK tests/cassettes/NAME`` runs
runs.json's commands against it on a fresh copy of the project. Then ``python
tests/cassette.py import DIR tests/cassettes/NAME`` turns the relay's directory into exchanges
and ``python tests/cassette.py expect WORK/outputs WORK/repo tests/cassettes/NAME DIRECTORY``
writes what each run ended with and the documents they left (docs/agents.md, "The recorded
run"); while recording, ``python tests/cassette.py draft DIR tests/cassettes/NAME`` drafts each
waiting request's answer from the nearest recorded one, for that person to check.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import shutil
import subprocess
import sys
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


COMMANDS = ("find", "git", "grep", "head", "ls", "sed", "tail", "wc")
"""The commands a recording's machine has: the bash tool's description and the author's
prompt list what is on the PATH, so a recording and its replay run with exactly these."""


def pinned_path(directory: Path) -> str:
    """A PATH of one directory holding exactly ``COMMANDS`` (links to this machine's)."""
    directory.mkdir(parents=True, exist_ok=True)
    for name in COMMANDS:
        found = shutil.which(name)
        if found is None:
            raise SystemExit(f"{name} is not installed: a recording needs {', '.join(COMMANDS)}")
        link = directory / name
        if not link.exists():
            link.symlink_to(found)
    return str(directory)


def record(base_url: str, work: Path, cassette: Path) -> Path:
    """Run the commands of the cassette's runs.json, in order, on a fresh copy of its project
    (``work/repo``, with an empty ``.git``) against the relay at ``base_url``; each run's
    ``--json`` (with its exit code) goes to ``work/outputs/NN.json``. runs.json is read again
    before each run, so a later run's arguments can follow what an earlier one wrote (the
    section an edit names). Returns the repository."""
    runs_json = cassette / "runs.json"
    spec = json.loads(runs_json.read_text(encoding="utf-8"))
    repo, outputs = work / "repo", work / "outputs"
    if repo.exists():
        raise SystemExit(f"{repo} exists: record into an empty directory")
    shutil.copytree(cassette / "project", repo)
    (repo / ".git").mkdir()
    outputs.mkdir(parents=True, exist_ok=True)
    designloop = Path(sys.executable).with_name("designloop")
    env = {**os.environ, "OPENAI_API_KEY": os.environ.get("OPENAI_API_KEY", "relay")}
    env["PATH"] = pinned_path(work / "bin")
    env.pop("OPENAI_BASE_URL", None)
    for number in range(1, len(spec["runs"]) + 1):
        spec = json.loads(runs_json.read_text(encoding="utf-8"))
        run = spec["runs"][number - 1]
        argv = [str(designloop), *run["args"], "--model", spec["model"], "--base-url", base_url, "--json"]
        print(f"run {number}: {' '.join(run['args'])}", flush=True)
        done = subprocess.run(argv, cwd=repo, env=env, capture_output=True, text=True, check=False)
        out = json.loads(done.stdout) if done.stdout.strip() else {"error": done.stderr}
        out.setdefault("exit_code", done.returncode)
        (outputs / f"{number:02d}.json").write_text(json.dumps(out, indent=1) + "\n", encoding="utf-8")
        print(f"run {number}: exit {done.returncode}", flush=True)
    return repo


RUN_KEYS = ("outcome", "exit_code", "rounds", "blocking", "review_log_entry", "declined")


def ended(args: list[str], out: dict[str, Any]) -> dict[str, Any]:
    """What a run of ``args`` ended with, from its ``--json`` (``out``): what runs.json records
    and the replay must end with again. A run (create, edit, final): its outcome, exit code,
    rounds, blocking count, review-log entry, declined parts of an instruction, and each
    finding's role, rule, severity, rounds, status and line. A one-role ``review``: its exit
    code, each result's status and verdict, each finding's rule, severity and line, and
    whether it appended a gate entry."""
    if args[0] == "review":
        results = out.get("results", [])
        return {
            "exit_code": out.get("exit_code", 0),
            "results": [[r["status"], (r.get("output") or {}).get("verdict")] for r in results],
            "findings": [
                [f["rule"], f["severity"], f.get("line")]
                for r in results
                for f in (r.get("output") or {}).get("findings", [])
            ],
            "gate_entry": bool(out.get("gate_entry")),
        }
    said = {key: out.get(key) for key in RUN_KEYS}
    said["findings"] = [
        [f.get("role"), f["rule"], f["severity"], f["rounds"], f["status"], f["line"]]
        for f in out.get("findings", [])
    ]
    return said


def expect(outputs: Path, repo: Path, cassette: Path, directory: str) -> int:
    """Write runs.json and expected/ from a recording: ``outputs`` holds each run's ``--json``
    as NN.json (in the order of runs.json's ``runs``, whose ``args`` are kept), ``repo`` the
    repository the runs worked on."""
    spec = json.loads((cassette / "runs.json").read_text(encoding="utf-8"))
    runs = []
    for number, run in enumerate(spec["runs"], start=1):
        out = json.loads((outputs / f"{number:02d}.json").read_text(encoding="utf-8"))
        runs.append({"args": run["args"], **ended(run["args"], out)})
    spec["runs"] = runs
    (cassette / "runs.json").write_text(
        json.dumps(spec, indent=1, ensure_ascii=False) + "\n", encoding="utf-8"
    )
    design = repo / directory
    expected = cassette / "expected"
    expected.mkdir(exist_ok=True)
    for name, path in EXPECTED.items():
        if (design / path).is_file():
            shutil.copyfile(design / path, expected / name)
    return len(runs)


EXPECTED = {
    "design.md": "_workflow/design.md",
    "design-final.md": "design-final.md",
    "design-mutations.md": "_workflow/design-mutations.md",
    "research-log.md": "_workflow/research-log.md",
}
"""The documents the runs leave, as expected/ keeps them (the research log: its gate record)."""


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
    recorded = sub.add_parser(
        "record", help="run runs.json's commands on a copy of the project against a relay"
    )
    recorded.add_argument("base_url", help="the relay's base URL, http://127.0.0.1:PORT/v1")
    recorded.add_argument(
        "work", type=Path, help="an empty directory: the repository and the outputs go there"
    )
    recorded.add_argument("cassette", type=Path)
    expected = sub.add_parser("expect", help="write runs.json and expected/ from the runs' --json and files")
    expected.add_argument("outputs", type=Path, help="the runs' --json outputs, 01.json, 02.json ...")
    expected.add_argument("repo", type=Path, help="the repository the runs worked on")
    expected.add_argument("cassette", type=Path)
    expected.add_argument("directory", help="the design directory, relative to the repository")
    args = parser.parse_args()
    if args.command == "record":
        print(f"the runs worked on {record(args.base_url, args.work, args.cassette)}")
        return
    if args.command == "expect":
        count = expect(args.outputs, args.repo, args.cassette, args.directory)
        print(f"{count} runs written to {args.cassette / 'runs.json'}")
        return
    if args.command == "draft":
        for note in draft(args.relay, args.cassette):
            print(note)
        return
    print(f"{import_relay(args.relay, args.cassette)} exchanges written to {args.cassette / 'exchanges'}")


if __name__ == "__main__":
    main()
