"""Sections for the offline digest: related items grouped and named without an LLM.

Each item's text is embedded with WordLlama (its wheel ships the embeddings: loaded from the
package folder with downloads disabled, so nothing leaves the machine), the embeddings are
grouped by spherical k-means (about one section per SECTION_ITEMS items, 3 to 10), and each
section is named by the words that tell it from the others (class-based TF-IDF over the
items' titles and openings). Deterministic: a fixed seed, ties broken by order.
"""

from __future__ import annotations

import logging
import math
from collections import Counter
from collections.abc import Sequence
from functools import cache
from pathlib import Path
from typing import Any

import numpy as np

from digest.compose.stories import TEXT_CHARS, story_text
from digest.models import Item
from digest.notes.tags import is_tag_word
from digest.text import words

MIN_ITEMS = 6  # fewer items are one short list: no sections to find
SECTION_ITEMS = 7  # about this many items per section
MIN_SECTIONS, MAX_SECTIONS = 3, 10
EMBEDDED_CHARS = TEXT_CHARS  # the opening of a text says what it is about
NAME_WORDS = 2
EMBED_BATCH = 64  # texts tokenised at once
RESTARTS = 10  # k-means runs from different seeds, the best kept ...
RESTART_ITEMS = 200  # ... for a week of up to this many items; fewer beyond
MIN_RESTARTS = 3
ITERATIONS = 50  # at most: a run stops when no item changes section


def offline_sections(items: Sequence[Item]) -> dict[int, str]:
    """Item id -> section name for the items that have no topic of their own, most central
    first within each section (the overview cites those); {} when too few to group."""
    loose = [item for item in items if not item.topic]
    if len(loose) < MIN_ITEMS:
        return {}
    texts = [f"{item.display_title}\n{story_text(item)}"[:EMBEDDED_CHARS] for item in loose]
    bags = [words(text) for text in texts]  # read once, for the vectors and the names
    count = min(MAX_SECTIONS, max(MIN_SECTIONS, round(len(loose) / SECTION_ITEMS)))
    vectors = features(texts, bags)
    labels = cluster(vectors, count)
    names = section_names(bags, labels)
    members = _members(np.array(labels), max(labels) + 1)
    centres = (members @ vectors) / members.sum(axis=1, keepdims=True)  # each section's mean
    closeness = np.einsum("ij,ij->i", vectors, centres[labels]).tolist()
    order = sorted(range(len(loose)), key=lambda n: (labels[n], -closeness[n], n))
    return {loose[n].id: names[labels[n]] for n in order}


def features(texts: Sequence[str], bags: Sequence[Sequence[str]]) -> np.ndarray[Any, Any]:
    """What a text is about: its embedding (centred on the week's, so that what all items
    share does not count) beside its TF-IDF vector over the words two or more texts use;
    unit length, the two halves weighted alike."""
    meaning = embed(texts)
    meaning = _unit(meaning - meaning.mean(axis=0))
    vectors = np.hstack([meaning, _word_vectors(bags)])
    vectors /= math.sqrt(2)  # in place: a week's vectors are tens of megabytes
    return vectors


def _word_vectors(texts: Sequence[Sequence[str]]) -> np.ndarray[Any, Any]:
    bags = [Counter(text) for text in texts]
    frequency = Counter(word for bag in bags for word in bag)
    vocabulary = {word: n for n, word in enumerate(w for w, df in frequency.items() if df >= 2)}
    matrix = np.zeros((len(texts), max(1, len(vocabulary))), dtype=np.float32)
    for row, bag in enumerate(bags):
        for word, count in bag.items():
            if word in vocabulary:
                idf = math.log(len(texts) / frequency[word])
                matrix[row, vocabulary[word]] = (1 + math.log(count)) * idf
    return _unit(matrix)


def _members(labels: np.ndarray[Any, Any], count: int) -> np.ndarray[Any, Any]:
    """count × items, 1 where the item is in the section: a product with it sums each section
    in one pass, where picking each section's rows out would copy the whole matrix again."""
    members: np.ndarray[Any, Any] = (labels == np.arange(count)[:, None]).astype(np.float32)
    return members


def _unit(matrix: np.ndarray[Any, Any]) -> np.ndarray[Any, Any]:
    norms = np.linalg.norm(matrix, axis=1, keepdims=True)
    return matrix / np.where(norms == 0, 1.0, norms)


def embed(texts: Sequence[str]) -> np.ndarray[Any, Any]:
    """Unit-length embeddings, one row per text: the mean of its tokens' WordLlama vectors,
    as WordLlama.embed gives, pooled text by text (its own pooling pads every text of a
    batch to the longest and multiplies the padding through: most of compose's time)."""
    model = _model()
    table = model.embedding
    pooled = np.zeros((len(texts), table.shape[1]), dtype=np.float32)
    for start in range(0, len(texts), EMBED_BATCH):  # a tokenised text weighs ~100 B a token
        batch = list(texts[start : start + EMBED_BATCH])
        for row, encoding in enumerate(
            model.tokenizer.encode_batch(batch, add_special_tokens=False), start
        ):
            ids = np.clip(np.asarray(encoding.ids, dtype=np.int64), 0, len(table) - 1)
            if len(ids):
                pooled[row] = table[ids].mean(axis=0)
    return _unit(pooled)


@cache
def _model() -> Any:
    import wordllama  # loaded on first use: importing this module stays cheap

    logging.getLogger("kmeans_logger").setLevel(logging.WARNING)
    folder = Path(wordllama.__file__).parent
    model = wordllama.WordLlama.load(cache_dir=folder, disable_download=True)
    model.tokenizer.no_padding()  # embed() pools each text alone
    return model


def cluster(vectors: np.ndarray[Any, Any], count: int) -> list[int]:
    """Spherical k-means, the best of a few seeded runs; labels renumbered by first item."""
    count = min(count, len(vectors))
    best, best_fit = np.zeros(len(vectors), dtype=int), -math.inf
    for seed in range(restarts(len(vectors))):
        labels, fit = _kmeans(vectors, count, np.random.RandomState(seed))
        if fit > best_fit + 1e-9:
            best, best_fit = labels, fit
    order = {label: n for n, label in enumerate(dict.fromkeys(best.tolist()))}
    return [order[label] for label in best.tolist()]


def restarts(items: int) -> int:
    """RESTARTS runs for a week of up to RESTART_ITEMS items, fewer (down to MIN_RESTARTS)
    beyond: each run costs as much as the items, and a big week has no bad start to escape."""
    return max(MIN_RESTARTS, min(RESTARTS, RESTARTS * RESTART_ITEMS // max(1, items)))


def _kmeans(
    vectors: np.ndarray[Any, Any], count: int, random: np.random.RandomState
) -> tuple[np.ndarray[Any, Any], float]:
    centres = [vectors[random.randint(len(vectors))]]
    for _ in range(count - 1):  # k-means++: far from the centres so far
        distance = np.maximum(0.0, 1.0 - np.max(vectors @ np.array(centres).T, axis=1))
        total = distance.sum()
        pick = random.choice(len(vectors), p=distance / total) if total > 0 else 0
        centres.append(vectors[pick])
    matrix = np.array(centres)
    labels = np.full(len(vectors), -1)
    for _ in range(ITERATIONS):
        nearest = np.argmax(vectors @ matrix.T, axis=1)
        if np.array_equal(nearest, labels):
            break  # converged: the centres would not move again
        labels = nearest
        sums = _members(labels, count) @ vectors
        norms = np.linalg.norm(sums, axis=1)
        filled = np.bincount(labels, minlength=count) > 0  # an empty section keeps its centre
        matrix[filled] = sums[filled] / np.where(norms[filled] == 0, 1.0, norms[filled])[:, None]
    fit = (vectors @ matrix.T)[np.arange(len(vectors)), labels]
    return labels, float(fit.sum())


def section_names(texts: Sequence[Sequence[str]], labels: Sequence[int]) -> dict[int, str]:
    """Each section's name: its NAME_WORDS most telling words (class-based TF-IDF), capitalised;
    `texts` are the items' words."""
    bags = [set(text) for text in texts]
    tag_words = set(filter(is_tag_word, set().union(*bags)))  # each distinct word checked once
    bags = [bag & tag_words for bag in bags]
    per_section: dict[int, Counter[str]] = {}
    for bag, label in zip(bags, labels, strict=True):
        per_section.setdefault(label, Counter()).update(bag)
    sections_with = Counter(word for counts in per_section.values() for word in counts)
    sizes = Counter(labels)
    names: dict[int, str] = {}
    for label, counts in per_section.items():
        score = {
            word: n / sizes[label] * math.log(1 + len(per_section) / sections_with[word])
            for word, n in counts.items()
            if n >= 2 or sizes[label] == 1
        }
        best: list[str] = []
        for word in sorted(score, key=lambda word: (-score[word], word)):
            if len(best) < NAME_WORDS and not any(word[:5] == kept[:5] for kept in best):
                best.append(word)  # "Chart", not "Chart, Charts"
        names[label] = ", ".join(word.capitalize() for word in best) or f"Section {label + 1}"
    return _distinct(names)


def _distinct(names: dict[int, str]) -> dict[int, str]:
    seen: Counter[str] = Counter()
    named = {}
    for label, name in sorted(names.items()):
        seen[name] += 1
        named[label] = name if seen[name] == 1 else f"{name} ({seen[name]})"
    return named
