"""The offline inline editor's reading of an instruction: the requests a rule can carry out.

One request per line (or separated by ";" outside quotes), quotes in "", '', `` or “”:

- replace (or change) "X" with (or to) "Y"
- delete (or remove, drop) "X"
- insert (or add) "Y" after (or before) "X"
- append "Y" (a new paragraph at the end of the section, before its footer)

"X" must occur exactly once in the section the edit names (or the whole file). Anything else
needs judgement: the request is reported as not applied and the text is left as it was.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from pathlib import Path

from pipeline.formats.design_doc import FOOTER_PREFIX
from pipeline.formats.edits import find_section, join, parse
from pipeline.formats.textio import split_lines

Q = r"(?:\"(?P<{0}1>[^\"]+)\"|'(?P<{0}2>[^']+)'|`(?P<{0}3>[^`]+)`|“(?P<{0}4>[^”]+)”)"
REPLACE_RE = re.compile(
    rf"^(?:replace|change)\s+{Q.format('x')}\s+(?:with|to|by)\s+{Q.format('y')}\s*\.?$", re.I
)
DELETE_RE = re.compile(rf"^(?:delete|remove|drop)\s+{Q.format('x')}\s*\.?$", re.I)
INSERT_RE = re.compile(
    rf"^(?:insert|add)\s+{Q.format('y')}\s+(?P<where>after|before)\s+{Q.format('x')}\s*\.?$", re.I
)
APPEND_RE = re.compile(rf"^append\s+{Q.format('y')}\s*\.?$", re.I)
DOC_PATH = Path("design.md")
CLOSING = {'"': '"', "'": "'", "`": "`", "“": "”"}
"""Each quote and the mark that closes it."""


def _group(match: re.Match[str], name: str) -> str:
    return next(v for i in range(1, 5) if (v := match.group(f"{name}{i}")) is not None)


@dataclass(slots=True)
class Outcome:
    text: str
    applied: list[str] = field(default_factory=list)
    failed: list[str] = field(default_factory=list)


def _quotes_close(text: str) -> list[bool]:
    """For each position, whether the text from there on is plain text and whole quotations
    (a quote closed by the next closing mark of its kind). One pass from the end."""
    closes = [False] * (len(text) + 1)
    closes[len(text)] = True
    following: dict[str, int] = {}
    for at in range(len(text) - 1, -1, -1):
        char = text[at]
        if char in CLOSING:
            end = following.get(CLOSING[char])
            closes[at] = end is not None and closes[end + 1]
        else:
            closes[at] = char != "”" and closes[at + 1]
        following[char] = at
    return closes


def requests(instruction: str) -> list[str]:
    """The requests: one per line, or separated by ";" outside quotes (a ";" after which the
    rest of the instruction is plain text and whole quotations)."""
    closes = _quotes_close(instruction)
    parts: list[str] = []
    start = 0
    for at, char in enumerate(instruction):
        if char == "\n" or (char == ";" and closes[at + 1]):
            parts.append(instruction[start:at])
            start = at + 1
    parts.append(instruction[start:])
    return [part.strip() for part in parts if part.strip()]


def _scope(text: str, section: str | None) -> tuple[int, int]:
    """Character span of the section (or the whole text)."""
    if not section:
        return 0, len(text)
    doc = parse(text, DOC_PATH)
    found = find_section(doc, section)
    if found is None:
        return 0, 0
    lines = split_lines(text)
    start = sum(len(line) + 1 for line in lines[: found.start - 1])
    stop = sum(len(line) + 1 for line in lines[: found.end])
    return start, min(stop, len(text))


def _replace_once(text: str, section: str | None, old: str, new: str) -> tuple[str, str | None]:
    start, stop = _scope(text, section)
    span = text[start:stop]
    count = span.count(old)
    if count != 1:
        where = f'§"{section}"' if section else "the file"
        return text, f'"{old}" occurs {count} times in {where}'
    at = start + span.find(old)
    if at < len(text.split("\n", 1)[0]):
        return text, "line 1 is not the editor's to change"
    return text[:at] + new + text[at + len(old) :], None


def _present(text: str, section: str | None, passage: str) -> bool:
    """``passage`` already stands in the section (a request carried out before: a re-run of the
    spawn must not write it twice)."""
    start, stop = _scope(text, section)
    return passage in text[start:stop]


def _append(text: str, section: str | None, addition: str) -> tuple[str, str | None]:
    if _present(text, section, addition):
        return text, None
    if not section:
        return join([*split_lines(text), "", addition]), None
    doc = parse(text, DOC_PATH)
    found = find_section(doc, section)
    if found is None:
        return text, f'no section "{section}"'
    last = doc.last_text_line(found)
    lines = list(doc.lines)
    if last is not None and last[1].strip().startswith(FOOTER_PREFIX):
        lines[last[0] - 1 : last[0] - 1] = [addition, ""]
    else:
        at = last[0] if last else found.start
        lines[at:at] = ["", addition]
    return join(lines), None


def _delete(text: str, section: str | None, old: str) -> tuple[str, str | None]:
    """Delete ``old`` with one of the spaces around it, so no double space is left."""
    start, stop = _scope(text, section)
    span = text[start:stop]
    if span.count(old) != 1:
        return _replace_once(text, section, old, "")
    at = start + span.find(old)
    end = at + len(old)
    if at > 0 and text[at - 1] == " " and (end == len(text) or text[end] in " .,;:\n"):
        at -= 1
    return _replace_once(text, section, text[at:end], "")


def apply(text: str, instruction: str, section: str | None) -> Outcome:
    out = Outcome(text)
    for request in requests(instruction):
        error: str | None
        if (m := REPLACE_RE.match(request)) is not None:
            out.text, error = _replace_once(out.text, section, _group(m, "x"), _group(m, "y"))
        elif (m := DELETE_RE.match(request)) is not None:
            out.text, error = _delete(out.text, section, _group(m, "x"))
        elif (m := INSERT_RE.match(request)) is not None:
            anchor, addition = _group(m, "x"), _group(m, "y")
            joined = (
                anchor + " " + addition if m.group("where").lower() == "after" else addition + " " + anchor
            )
            if not _present(out.text, section, joined):
                out.text, error = _replace_once(out.text, section, anchor, joined)
            else:
                error = None
        elif (m := APPEND_RE.match(request)) is not None:
            out.text, error = _append(out.text, section, _group(m, "y"))
        else:
            error = "needs judgement: not a request a rule can carry out"
        (out.failed if error else out.applied).append(request if not error else f"{request} ({error})")
    return out
