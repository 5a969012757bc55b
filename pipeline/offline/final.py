"""Phase 4 for the offline author: design-final.md from the frozen design, the track
episodes and the code, with what the episodes supersede rewritten from them."""

from __future__ import annotations

import re
from pathlib import Path

from pipeline.formats.plan import Entry, parse_plan_file
from pipeline.formats.textio import decode
from pipeline.offline import supersede
from pipeline.offline.observe import Observations
from pipeline.offline.pages import failed, read_whole
from pipeline.offline.text import clean, doc_from_text, sentences


def _flat(text: str) -> str:
    return " ".join(text.split())


def _episodes(obs: Observations, episodes_path: str) -> list[tuple[str, str, Entry]]:
    listing = obs.call("read", path=episodes_path)
    if failed(listing):
        return []
    names = sorted(n for n in listing.splitlines() if re.match(r"track-[\w-]+\.md$", n))
    base = episodes_path.rstrip("/")
    out = []
    for name in names:
        text = read_whole(obs, f"{base}/{name}")
        plan = parse_plan_file(decode(text.encode("utf-8"), Path(name)))
        title = next((h.text for h in plan.structure.headings if h.level == 1), name)
        out += [(name, title, e) for e in plan.episodes]
    return out


def compile_phase4(frozen_text: str, obs: Observations, episodes_path: str) -> str:
    episodes = _episodes(obs, episodes_path)
    lines = [line for line in frozen_text.split("\n") if not line.startswith("<!-- workflow-sha:")]
    lines = [line for line in lines if not line.strip().startswith("**Mechanics:**")]
    found = supersede.find(doc_from_text("\n".join(lines)), [(title, e) for _, title, e in episodes])
    for item in found:
        # Body sections that still state the superseded decision take the episode's account.
        doc = doc_from_text("\n".join(lines))
        for section in doc.body_sections():
            body = " ".join(clean(t) for _, t in doc.prose_lines(section.start + 1, section.end))
            if item.reasserts(f"{section.name}. {body}"):
                lines[section.start - 1 : section.end] = [
                    f"## {section.name}",
                    "",
                    f"**TL;DR:** {item.now()}",
                    "",
                    " ".join(item.story),
                    "",
                ]
                break
        doc = doc_from_text("\n".join(lines))
        container = doc.find("Decision Records")
        recs = doc.d_records()
        for index, record in enumerate(recs):
            if record.number != item.number:
                continue
            stop = (
                recs[index + 1].line - 1
                if index + 1 < len(recs)
                else (container.end if container else len(lines))
            )
            label = item.episode.title.split(":", 1)
            lines[record.line - 1 : stop] = [
                f"### D{item.number}: {label[-1].strip()}",
                f"**Decision:** {item.now()}",
                f"**Alternatives rejected:** {item.old.title}, which {item.track} superseded.",
                f"**Rationale:** {item.why()}",
                f"**Source:** {item.track}, {label[0].strip()}",
                "",
            ]
            break
    built = ["## As built", "", "**TL;DR:** What the tracks delivered, as their episodes record it.", ""]
    for _name, title, episode in episodes:
        body = supersede.FULL_DESIGN_RE.sub("", episode.body)
        first = sentences(_flat(body))
        built.append(f"- **{title}, {episode.title}.** {first[0] if first else ''}".rstrip())
    doc = doc_from_text("\n".join(lines))
    container = doc.find("Decision Records")
    at = container.start - 1 if container else len(lines)
    if episodes:
        lines[at:at] = [*built, ""]
    return re.sub(r"\n{3,}", "\n\n", "\n".join(lines)).strip() + "\n"
