"""The built-in summariser: extractive, deterministic, no network.

The summary is the lead, cleaned (no dateline, no fragment, no restatement of a sentence
already picked), where a much more central early sentence may stand in for a weak one;
centrality is TextRank (a PageRank over the TF-IDF cosine similarity graph of the sentences)
whose teleport prior favours sentences near the start and sentences with more content words.
Key points are the most central of the other sentences, in reading order. On news this scores
at least lead-3 against summaries people wrote and above it against extractive ones
(docs/benchmarks.md, "Issue 20, item 6").
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from digest.config import LLMConfig
from digest.errors import SummarizeError
from digest.models import OFFLINE_MODEL, Note, NoteBasis, Statement, WeekSummary
from digest.notes.base import MAX_KEY_POINT_CHARS, NoteRequest
from digest.notes.tags import tags_for
from digest.text import (
    clean,
    cosine,
    is_list_line,
    list_item,
    sentences,
    shorten,
    similarities,
    strip_trailing_punctuation,
    tfidf,
    without_links,
    words,
)

PROMPT_VERSION = "extractive-3"
MAX_SENTENCE_CHARS = 320
MAX_SENTENCES = 400  # the rest of a very long page rarely changes the note
DAMPING = 0.85
# Weights of the lead and of the title's words in the centrality prior (see rank_sentences);
# chosen on the even rows of the BBC development set, checked on the odd rows (benchmarks.md).
LEAD_WEIGHT = 1.0
TITLE_WEIGHT = 2.0
FULL_LENGTH_WORDS = 20  # the length prior saturates at this many content words
NEAR_DUPLICATE = 0.9  # cosine similarity above which a sentence repeats one already picked
# The summary is the lead, cleaned: a lead sentence that restates one already picked (a
# caption, a repeated standfirst) is skipped, and a lead sentence gives way to one of the first
# SWAP_WINDOW sentences only when that one is SWAP_MARGIN times as central and no quote or
# question. Chosen on the writers' ids 0-7 and the BBC even rows (docs/benchmarks.md).
RESTATEMENT = 0.5
SWAP_MARGIN = 2.0
SWAP_WINDOW = 10
MAX_LIST_POINTS = 5  # a note that is a list shows its first items
KEY_POINT_MIN_WORDS = 3  # content words; fewer is a fragment, not a point


_DATELINE = re.compile(
    r"^(?:[A-Z][\w.'-]*(?:[ ,]+[A-Z][\w.'-]*)*\s*)?\((?:CNN|AP|AFP|Reuters)\)\s*(?:--|—|–|-)?\s*"
)
_SPOKEN = re.compile(r"^[\"'“‘]|:\s*[\"'“‘]|\?[\"'”’]*$")  # a quote or a question: no summary
_LIST_MARKER = re.compile(r"^\s*(?:[-*+•▪→>❯]+\s*|\d{1,3}[.)]\s)")  # "- x", "-x", "1. x"


class OfflineSummarizer:
    """Extractive notes and a tag-based week summary; same input, same output."""

    def __init__(self, config: LLMConfig) -> None:
        self.model = self.summary_model = OFFLINE_MODEL
        self.sentence_count = config.note_sentences
        self.prompt_version = f"{PROMPT_VERSION}-s{config.note_sentences}"

    async def note(self, request: NoteRequest, *, calls_allowed: int | None = None) -> Note:
        return self.note_now(request)

    def note_now(self, request: NoteRequest) -> Note:
        """The note, synchronously: there is nothing to wait for."""
        text = clean(request.text)
        if request.basis is NoteBasis.SAVED_CONTEXT:  # a link's address is no sentence of it
            text = _without_title("\n".join(map(without_links, text.split("\n"))), request.title)
        found = _statements(text)
        if request.basis is NoteBasis.SAVED_CONTEXT or not found:
            summary = _saved_link_summary(request, found)
            rest: list[str] = []
        else:
            sentences = Ranked.of(found, request.title)
            picked = pick_sentences(sentences, self.sentence_count)
            summary = " ".join(shorten(found[i], MAX_SENTENCE_CHARS) for i in sorted(picked))
            points = central_sentences(sentences, 3, picked)
            rest = [found[i] for i in sorted(points) if _fits_key_point(found[i], request)]
        if not rest and request.url is None:  # a post's or note's own list, as a short list
            rest = listed(text)
        return Note(
            summary=summary,
            key_points=tuple(rest),
            tags=tags_for(" ".join([request.title or "", text]), request.known_tags),
            basis=request.basis,
            model=self.model,
            prompt_version=self.prompt_version,
        )

    async def week_summary(
        self, period_label: str, notes: list[tuple[int, str, Note]]
    ) -> WeekSummary:
        return week_summary_of(notes)

    def planned_tokens(self, request: NoteRequest) -> int | None:
        return None

    def planned_week_tokens(self, note_count: int) -> int | None:
        return None

    def take_problems(self) -> list[str]:
        return []  # no prompt files

    async def aclose(self) -> None:
        return None


def summary_sentences(text: str, count: int, title: str | None = None) -> list[str]:
    """The `count` sentences an offline note of `text` sums it up in (as `note_now` picks them,
    before each is shortened), in reading order: what bench/offline_rouge.py scores."""
    found = _statements(clean(text))
    return [found[i] for i in sorted(pick_sentences(Ranked.of(found, title), count))]


def _statements(text: str) -> list[str]:
    """The prose sentences (see `prose`), the first without a news dateline ("(CNN) -- ")."""
    found = prose(text)
    if found:
        found[0] = _DATELINE.sub("", found[0], count=1) or found[0]
    return found


def segment(text: str) -> list[str]:
    """The first MAX_SENTENCES sentences, which is all a note looks at."""
    return sentences(text, MAX_SENTENCES)


def prose(text: str) -> list[str]:
    """The sentences of `text` that are prose: list lines ("-x", "1. x", emoji bullets, a
    "Links ↓" trailer) and the lead-ins that announce them ("It touches on:") are left out, so
    no note is glued together from list items and their markers."""
    kept = "\n".join(line for line in text.split("\n") if not is_list_line(line))
    found = segment(kept)
    return [s for s in found if words(s) and not s.endswith(":") and not is_list_line(s)]


def listed(text: str) -> list[str]:
    """The first MAX_LIST_POINTS items of the list lines of `text`, without their markers."""
    items = (list_item(line) for line in text.split("\n") if is_list_line(line))
    fitting = [item for item in items if words(item) and len(item) <= MAX_KEY_POINT_CHARS]
    return fitting[:MAX_LIST_POINTS]


@dataclass(frozen=True)
class Ranked:
    """A text's sentences with their TF-IDF vectors and centrality, computed once per note
    for both the summary and the key points."""

    found: list[str]
    vectors: list[dict[str, float]]
    scores: list[float]

    @classmethod
    def of(cls, found: list[str], title: str | None) -> Ranked:
        bags = [words(s) for s in found]
        vectors = tfidf(bags)
        return cls(found, vectors, _centrality(bags, vectors, title))


def pick_sentences(sentences: Ranked, count: int) -> list[int]:
    """Indexes of the `count` sentences of the summary: the lead, cleaned.

    Writers summarise what the lead says (against their summaries lead-3 beat every central
    pick), so the summary is the first sentences that say something and do not restate one
    already picked; a much more central early sentence may replace the weakest but the first."""
    found, vectors, scores = sentences.found, sentences.vectors, sentences.scores
    picked: list[int] = []
    for i in range(len(found)):
        if len(picked) == count:
            break
        if _fits_summary(i, found, vectors, picked):
            picked.append(i)
    for _ in range(len(picked) - 1):
        weakest = min(picked[1:], key=lambda i: scores[i])
        rest = [i for i in picked if i != weakest]
        candidates = [
            i
            for i in range(min(SWAP_WINDOW, len(found)))
            if i not in picked
            and not _SPOKEN.search(found[i])
            and _fits_summary(i, found, vectors, rest)
        ]
        best = max(candidates, key=lambda i: scores[i], default=None)
        if best is None or scores[best] < SWAP_MARGIN * scores[weakest]:
            break
        picked = [*rest, best]
    return picked


def _fits_summary(
    i: int, found: list[str], vectors: list[dict[str, float]], picked: list[int]
) -> bool:
    """A sentence that says something, no run-on block, not a restatement of one picked."""
    return (
        _is_key_point(found[i])
        and not (len(found[i]) > MAX_SENTENCE_CHARS and picked)
        and all(cosine(vectors[i], vectors[j]) < RESTATEMENT for j in picked)
    )


def central_sentences(sentences: Ranked, count: int, taken: list[int]) -> list[int]:
    """Indexes of the `count` most central sentences not `taken`, best first, skipping
    near-duplicates of those and of the taken ones (the note's key points)."""
    found, vectors = sentences.found, sentences.vectors
    picked = list(taken)
    for i in _by_score(sentences.scores):
        if len(picked) - len(taken) == count:
            break
        if i in picked or (len(found[i]) > MAX_SENTENCE_CHARS and picked):  # a run-on block
            continue
        if all(cosine(vectors[i], vectors[j]) < NEAR_DUPLICATE for j in picked):
            picked.append(i)
    return picked[len(taken) :]


def centrality(
    found: list[str], vectors: list[dict[str, float]] | None = None, title: str | None = None
) -> list[float]:
    """Each sentence's centrality (PageRank over the similarity graph) whose teleport prior
    favours the lead (writers put the news first), sentences sharing the title's words and
    sentences that say more."""
    bags = [words(s) for s in found]
    return _centrality(bags, vectors or tfidf(bags), title)


def _centrality(
    bags: list[list[str]], vectors: list[dict[str, float]], title: str | None
) -> list[float]:
    edges: list[list[tuple[int, float]]] = [[] for _ in bags]
    for (i, j), weight in similarities(vectors).items():
        edges[i].append((j, weight))
        edges[j].append((i, weight))
    title_words = set(words(title or ""))
    prior = [
        1.0
        + LEAD_WEIGHT / (1 + i)
        + TITLE_WEIGHT * len(title_words & set(bag)) / max(1, len(title_words))
        + min(1.0, len(bag) / FULL_LENGTH_WORDS)
        for i, bag in enumerate(bags)
    ]
    total = sum(prior)
    return _pagerank(edges, [p / total for p in prior])


def rank_sentences(
    found: list[str], vectors: list[dict[str, float]] | None = None, title: str | None = None
) -> list[int]:
    """Indexes of sentences (or passages), most central first; ties go to the earlier one."""
    return _by_score(centrality(found, vectors, title))


def _by_score(scores: list[float]) -> list[int]:
    return sorted(range(len(scores)), key=lambda i: (-round(scores[i], 12), i))


def _pagerank(edges: list[list[tuple[int, float]]], teleport: list[float]) -> list[float]:
    """Personalised PageRank over a weighted undirected graph; isolated nodes follow the prior."""
    count = len(edges)
    out = [sum(weight for _, weight in node) for node in edges]
    scores = list(teleport)
    for _ in range(100):
        dangling = sum(scores[j] for j in range(count) if not out[j])
        updated = [(1 - DAMPING + DAMPING * dangling) * teleport[i] for i in range(count)]
        for j in range(count):
            if out[j]:
                share = DAMPING * scores[j] / out[j]
                for i, weight in edges[j]:
                    updated[i] += weight * share
        converged = sum(abs(u - s) for u, s in zip(updated, scores, strict=True)) < 1e-9
        scores = updated
        if converged:
            break
    return scores


def _without_title(text: str, title: str | None) -> str:
    """Saved context repeats the title, alone on its line or opening it ("FlashInfer - Better
    Sampling"): the digest names it once, so the note is what follows it."""
    if not title:
        return text
    key = _normalised(title)
    lines = (_after_title(line, key) for line in text.split("\n"))
    return "\n".join(line for line in lines if line)


def _after_title(line: str, key: str) -> str:
    """The line less a title that opens it and the separator after it ("" when it is all)."""
    if _normalised(line) == key:
        return ""
    if not line.lower().startswith(key) or line[len(key) : len(key) + 1].isalnum():
        return line
    rest = line[len(key) :].lstrip(" -–—:;,.|")
    return rest[:1].upper() + rest[1:] if rest else ""


def _normalised(line: str) -> str:
    return strip_trailing_punctuation(" ".join(line.lower().split()))


def _is_key_point(sentence: str) -> bool:
    """A sentence that says something: no list-item fragment ("\\- hardware"), no bare link."""
    text = without_links(sentence).lstrip("\\")
    return not _LIST_MARKER.match(text) and len(words(text)) >= KEY_POINT_MIN_WORDS


def _fits_key_point(sentence: str, request: NoteRequest) -> bool:
    """A whole sentence short enough for a point, that is not the title again."""
    title = _normalised(request.title or "")
    return (
        len(sentence) <= MAX_KEY_POINT_CHARS
        and _is_key_point(sentence)
        and not (title and title in _normalised(sentence))
    )


def _saved_link_summary(request: NoteRequest, found: list[str]) -> str:
    """A link whose page was not read, or a note without one: what was saved with it, never a
    sentence pretending to summarise the page ("Saved link from arxiv.org.")."""
    context = shorten(" ".join(found), MAX_SENTENCE_CHARS * 2)
    if context:
        context = context[0].upper() + context[1:]
        return context + ("" if context[-1] in ".!?…" else ".")
    if not (request.title or request.url):
        raise SummarizeError(f"item {request.item_id}: nothing to summarise")
    return ""  # nothing but the title was saved: no note repeats it


def week_summary_of(notes: list[tuple[int, str, Note]]) -> WeekSummary:
    """The most frequent tags as themes, each citing its items; deterministic."""
    tag_items: dict[str, list[int]] = {}
    for item_id, _title, note in notes:
        for tag in dict.fromkeys(t.lower() for t in note.tags):
            tag_items.setdefault(tag, []).append(item_id)
    themes = sorted(
        (tag for tag, ids in tag_items.items() if len(ids) >= 2),
        key=lambda tag: (-len(tag_items[tag]), tag),
    )[:3]
    statements = (Statement(f"Recurring theme: {tag}", tuple(tag_items[tag])) for tag in themes)
    return WeekSummary(tuple(statements), model=OFFLINE_MODEL)
