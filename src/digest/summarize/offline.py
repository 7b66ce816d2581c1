"""The built-in summariser: extractive, deterministic, no network.

Sentences are scored by centrality (TextRank: a PageRank over the TF-IDF cosine similarity
graph of the sentences) with a mild prior for sentences near the start, and the best ones are
returned in reading order.
"""

from __future__ import annotations

import math
import re
from collections import Counter
from urllib.parse import urlsplit

from digest.config import LLMConfig
from digest.errors import SummarizeError
from digest.models import Note, NoteBasis
from digest.summarize.base import NoteRequest
from digest.summarize.text import (
    clean,
    sentences,
    shorten,
    strip_trailing_punctuation,
    words,
)

PROMPT_VERSION = "extractive-1"
MAX_SENTENCE_CHARS = 320
MAX_KEY_POINT_CHARS = 140
MAX_TAGS = 4
MAX_SENTENCES = 400  # the rest of a very long page rarely changes the note
DAMPING = 0.85


class OfflineSummarizer:
    """Extractive notes and a tag-based week summary; same input, same output."""

    def __init__(self, config: LLMConfig) -> None:
        self.model = "offline"
        self.sentence_count = config.note_sentences
        self.prompt_version = f"{PROMPT_VERSION}-s{config.note_sentences}"

    async def note(self, request: NoteRequest) -> Note:
        return self.note_now(request)

    def note_now(self, request: NoteRequest) -> Note:
        """The note, synchronously: there is nothing to wait for."""
        text = clean(request.text)
        if request.basis is NoteBasis.SAVED_CONTEXT:
            text = _without_title(text, request.title)
        found = [s for s in sentences(text) if words(s)][:MAX_SENTENCES]
        if request.basis is NoteBasis.SAVED_CONTEXT or not found:
            summary = _saved_link_summary(request, found)
            chosen_rest: list[str] = []
        else:
            ranked = rank_sentences(found)
            chosen = sorted(ranked[: self.sentence_count])
            summary = " ".join(shorten(found[i], MAX_SENTENCE_CHARS) for i in chosen)
            chosen_rest = [found[i] for i in ranked[self.sentence_count :]]
        return Note(
            summary=summary,
            key_points=tuple(shorten(s, MAX_KEY_POINT_CHARS) for s in chosen_rest[:3]),
            tags=tags_for(" ".join([request.title or "", text]), request.known_tags),
            basis=request.basis,
            model=self.model,
            prompt_version=self.prompt_version,
        )

    async def week_summary(self, period_label: str, notes: list[tuple[int, str, Note]]) -> str:
        return week_summary_text(period_label, notes)

    async def aclose(self) -> None:
        return None


def rank_sentences(found: list[str]) -> list[int]:
    """Sentence indexes, most central first; ties go to the earlier sentence."""
    vectors = _tfidf([words(s) for s in found])
    count = len(found)
    edges: list[list[tuple[int, float]]] = [[] for _ in range(count)]
    for i in range(count):
        for j in range(i + 1, count):
            weight = _cosine(vectors[i], vectors[j])
            if weight > 0:
                edges[i].append((j, weight))
                edges[j].append((i, weight))
    prior = [1.0 + 1.0 / (1 + i) for i in range(count)]  # mild: the lead counts a little more
    total = sum(prior)
    scores = _pagerank(edges, [p / total for p in prior])
    return sorted(range(count), key=lambda i: (-round(scores[i], 12), i))


def _tfidf(documents: list[list[str]]) -> list[dict[str, float]]:
    frequency = Counter(word for doc in documents for word in set(doc))
    count = len(documents)
    idf = {word: math.log((1 + count) / (1 + df)) + 1 for word, df in frequency.items()}
    return [{w: n * idf[w] for w, n in Counter(doc).items()} for doc in documents]


def _cosine(a: dict[str, float], b: dict[str, float]) -> float:
    if len(a) > len(b):
        a, b = b, a
    dot = sum(value * b.get(word, 0.0) for word, value in a.items())
    if not dot:
        return 0.0
    norm = math.sqrt(sum(v * v for v in a.values())) * math.sqrt(sum(v * v for v in b.values()))
    return dot / norm


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
        converged = sum(abs(u - s) for u, s in zip(updated, scores, strict=True)) < 1e-10
        scores = updated
        if converged:
            break
    return scores


def tags_for(text: str, known_tags: tuple[str, ...]) -> tuple[str, ...]:
    """Known tags that occur in the text first, then the most frequent content words."""
    lowered = text.lower()
    tags = [tag for tag in known_tags if _mentions(lowered, tag.lower())][:MAX_TAGS]
    counts = Counter(words(text))
    keywords = sorted(
        (w for w, n in counts.items() if n >= 2 and len(w) > 2 and not w.isnumeric()),
        key=lambda w: (-counts[w], -len(w), w),
    )
    for word in keywords:
        if len(tags) >= MAX_TAGS:
            break
        if not any(word in tag.lower().split() for tag in tags):  # "models" in "language models"
            tags.append(word)
    return tuple(tags)


def _mentions(lowered_text: str, tag: str) -> bool:
    pattern = r"(?<!\w)" + r"[\s-]+".join(map(re.escape, tag.split())) + r"(?!\w)"
    return bool(tag.strip()) and re.search(pattern, lowered_text) is not None


def _without_title(text: str, title: str | None) -> str:
    """Saved context repeats the title: the summary names it once."""
    if not title:
        return text
    key = _normalised(title)
    return "\n".join(line for line in text.split("\n") if _normalised(line) != key)


def _normalised(line: str) -> str:
    return strip_trailing_punctuation(" ".join(line.lower().split()))


def _saved_link_summary(request: NoteRequest, found: list[str]) -> str:
    """What there is to say about a link whose page we did not read, or a note without one."""
    title = strip_trailing_punctuation(clean(request.title or ""))
    if not request.url:
        head = f"{title}." if title else ""
    elif title:
        head = f"Saved link: {title}."
    else:
        head = f"Saved link from {urlsplit(request.url).hostname or request.url}."
    context = shorten(" ".join(found), MAX_SENTENCE_CHARS * 2)
    if context:
        context = context[0].upper() + context[1:]
        context += "" if context[-1] in ".!?…" else "."
    parts = [part for part in (head, context) if part]
    if not parts:
        raise SummarizeError(f"item {request.item_id}: nothing to summarise")
    return " ".join(parts)


def week_summary_text(period_label: str, notes: list[tuple[int, str, Note]]) -> str:
    """Themes from the most frequent tags, each citing its items as [id]; deterministic."""
    if not notes:
        return f"Nothing was saved in {period_label}."
    count = len(notes)
    noun = "item" if count == 1 else "items"
    tag_items: dict[str, list[int]] = {}
    for item_id, _title, note in notes:
        for tag in dict.fromkeys(t.lower() for t in note.tags):
            tag_items.setdefault(tag, []).append(item_id)
    themes = sorted(
        (tag for tag, ids in tag_items.items() if len(ids) >= 2 or count <= 3),
        key=lambda tag: (-len(tag_items[tag]), tag),
    )[:3]
    if not themes:
        cited = ", ".join(f"[{item_id}]" for item_id, _t, _n in notes)
        return f"{count} {noun} saved in {period_label}, with no common theme: {cited}."
    described = [f"**{tag}** ({', '.join(f'[{i}]' for i in tag_items[tag])})" for tag in themes]
    sentence = f"{count} {noun} saved in {period_label}; recurring themes: {_join(described)}."
    covered = {i for tag in themes for i in tag_items[tag]}
    rest = [f"[{item_id}]" for item_id, _t, _n in notes if item_id not in covered]
    if rest:
        sentence += f" Also saved: {', '.join(rest)}."
    return sentence


def _join(parts: list[str]) -> str:
    return parts[0] if len(parts) == 1 else ", ".join(parts[:-1]) + " and " + parts[-1]
