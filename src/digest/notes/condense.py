"""Long texts condensed to a token budget before an LLM call: never cut blindly (pure).

The text is split into passages (paragraphs; long ones into runs of sentences), the passages
are ranked by the offline summariser's centrality, and the most central ones that fit are kept
in reading order, each gap marked "[…]". Measured against cutting at the budget and against an
extractive map-reduce in bench/offline_rouge.py (docs/benchmarks.md, "Notes").
"""

from __future__ import annotations

from digest.notes.offline import rank_sentences
from digest.notes.tokens import count_tokens
from digest.text import paragraphs, sentences

GAP = "[…]"
PASSAGE_TOKENS = 120  # a passage grows to about this size (more for very long texts)
MAX_PASSAGES = 150  # ranking is quadratic in the number of passages


def condense(text: str, budget_tokens: int) -> str:
    """`text` when it fits in `budget_tokens`, else its most central passages within it."""
    total = count_tokens(text)
    if total <= budget_tokens:
        return text
    target = min(max(PASSAGE_TOKENS, total // MAX_PASSAGES), max(1, budget_tokens // 4))
    passages, sizes = _passages(text, target)
    kept: set[int] = set()
    used = count_tokens(GAP)
    for index in rank_sentences(passages):
        size = sizes[index] + 3  # the blank line after it, and perhaps a gap marker
        if used + size <= budget_tokens:
            kept.add(index)
            used += size
    return _in_reading_order(passages, kept)


def _passages(text: str, target_tokens: int) -> tuple[list[str], list[int]]:
    """Paragraphs, a very short one joined to the next and a long one split into runs of
    sentences of about `target_tokens`; with their sizes in tokens (about: joins add one)."""
    passages: list[str] = []
    sizes: list[int] = []
    current: list[str] = []
    size = 0
    for paragraph in paragraphs(text):
        for piece, tokens in _pieces(paragraph, target_tokens):
            if current and size + tokens > target_tokens:
                passages.append(" ".join(current))
                sizes.append(size)
                current, size = [], 0
            current.append(piece)
            size += tokens + 1
        if size >= target_tokens // 4:  # a heading or a one-liner joins what follows it
            passages.append(" ".join(current))
            sizes.append(size)
            current, size = [], 0
    if current:
        passages.append(" ".join(current))
        sizes.append(size)
    return passages, sizes


def _pieces(paragraph: str, target_tokens: int) -> list[tuple[str, int]]:
    """The paragraph, or its sentences when it is longer than a passage (runs of words when a
    sentence is: text without punctuation); each with its size in tokens."""
    if (tokens := count_tokens(paragraph)) <= target_tokens:
        return [(paragraph, tokens)]
    pieces: list[tuple[str, int]] = []
    for sentence in sentences(paragraph):
        if (tokens := count_tokens(sentence)) <= target_tokens:
            pieces.append((sentence, tokens))
            continue
        found = sentence.split()
        step = max(1, target_tokens // 2)  # a word is one to two tokens
        runs = (" ".join(found[i : i + step]) for i in range(0, len(found), step))
        pieces.extend((run, count_tokens(run)) for run in runs)
    return pieces


def _in_reading_order(passages: list[str], kept: set[int]) -> str:
    blocks: list[str] = []
    for index, passage in enumerate(passages):
        if index in kept:
            blocks.append(passage)
        elif not blocks or blocks[-1] != GAP:
            blocks.append(GAP)
    return "\n\n".join(blocks)
