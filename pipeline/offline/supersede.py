"""What the track episodes supersede, and whether a text still states the superseded decision."""

from __future__ import annotations

import re
from dataclasses import dataclass

from pipeline.formats.design_doc import DesignDoc
from pipeline.formats.plan import Entry
from pipeline.offline.logtext import RecordView, records
from pipeline.offline.text import containment, content_words, sentences

SUPERSEDES_RE = re.compile(r"\bsupersed(?:es|ed|e)\b[^.]*?\bD(?P<num>\d+)\b", re.IGNORECASE)
FULL_DESIGN_RE = re.compile(r"^[ \t]*+\*\*Full design:\*\*.*$", re.MULTILINE)
SUBJECT = 0.5
REFLECTED = 0.5


@dataclass(frozen=True, slots=True)
class Supersession:
    number: int
    old: RecordView
    track: str
    episode: Entry

    @property
    def story(self) -> list[str]:
        """The episode's own sentences, minus the supersede notice and plan references."""
        body = FULL_DESIGN_RE.sub("", self.episode.body)
        text = " ".join(body.split())
        return [s for s in sentences(text) if not SUPERSEDES_RE.search(s)]

    @property
    def story_words(self) -> set[str]:
        return content_words(" ".join(self.story) + " " + self.episode.title)

    def now(self) -> str:
        """The sentence that says what is true now."""
        story = self.story
        if not story:
            return self.episode.title
        for sentence in story:
            if re.search(r"\bnow\b", sentence, re.IGNORECASE):
                return sentence
        return story[-1]

    def why(self) -> str:
        now = self.now()
        rest = [s for s in self.story if s != now]
        return rest[0] if rest else now

    def reasserts(self, text: str) -> bool:
        """``text`` is about the old decision's subject and does not reflect the episode."""
        words = split_compounds(content_words(text), self.old.key_terms)
        if len(words) < 3:
            return False
        return (
            containment(self.old.key_terms, words) >= SUBJECT
            and containment(words, self.story_words) < REFLECTED
        )


def split_compounds(words: set[str], terms: set[str]) -> set[str]:
    """A closed compound of two terms ("failopen") counts as the two terms."""
    out = set(words)
    for word in words - terms:
        for term in terms:
            rest = word[len(term) :]
            if word.startswith(term) and rest in terms:
                out |= {term, rest}
    return out


def find(frozen: DesignDoc, episodes: list[tuple[str, Entry]]) -> list[Supersession]:
    by_number = {r.number: r for r in records(frozen)}
    out: list[Supersession] = []
    for track, episode in episodes:
        for match in SUPERSEDES_RE.finditer(episode.title + "\n" + episode.body):
            old = by_number.get(int(match.group("num")))
            if old is not None and all(s.number != old.number for s in out):
                out.append(Supersession(old.number, old, track, episode))
    return out
