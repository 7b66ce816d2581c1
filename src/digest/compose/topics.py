"""Sections for the offline digest: what the user said first, then groups found without an LLM.

An item's own grouping (a journal heading, a list's topic line, an OPML folder, a feed's
category, an export's tags, a rule's section) is its `topic` and is kept as it is. Of the
rest, items that clearly belong together form a section named by a short phrase most of them
contain: each item that says something (a link never read, with only a title or a URL, is
left out, so that it cannot rename the groups of the others) is embedded with WordLlama (its wheel ships the embeddings: loaded from the
package folder with downloads disabled, so nothing leaves the machine), the items are joined
by average-linkage clustering while their mean similarity stays above JOIN_SIMILARITY (a
threshold, not a count of sections: one more item cannot reshuffle the week), and a group is
kept only when a phrase found in most of its items names it (class-based TF-IDF, as BERTopic
does, then the candidate closest to the group's centre, as KeyBERT does); at least MIN_GROUP
members and NAME_SHARE of them contain that phrase. A name is never a count, a unit of time or a single
word that much of the rest of the week also has ("model"). Items of a feed
that joined no group go under the feed's name; the others under ALSO_SAVED. Deterministic.
"""

from __future__ import annotations

import logging
import math
import re
from collections import Counter
from collections.abc import Collection, Sequence
from functools import cache
from pathlib import Path
from typing import Any

import numpy as np

from digest.compose.stories import TEXT_CHARS, story_text
from digest.models import Item
from digest.notes.tags import is_tag_word
from digest.text import url_title, without_links, words

ALSO_SAVED = "Also saved"
_CLAUSE_END = re.compile(r"[^\w\s'’-]|\n")
_POSSESSIVE = re.compile(r"['’]s$", re.I)
_NUMBER_WORDS = """one two three four five six seven eight nine ten eleven twelve twenty hundred
    thousand million billion first second third last"""
_UNIT_WORDS = "second minute hour day week month year time"
_UNITS = [unit + plural for unit in _UNIT_WORDS.split() for plural in ("", "s")]
_NUMBERS = frozenset(_NUMBER_WORDS.split() + _UNITS)  # counts, ranks, units of time: no subject
EMBEDDED_CHARS = TEXT_CHARS  # the opening of a text says what it is about
JOIN_SIMILARITY = 0.1  # mean feature cosine under which two groups are not joined
MIN_GROUP = 3  # fewer items are no section of their own
NAME_SHARE = 0.5  # a section's name is found in at least this share of its items
GENERIC_SHARE = 0.25  # a single word in this share of the rest of the week names no group
TELLING = 3  # a name is this many times as common in its group as in the rest of the week


def offline_sections(items: Sequence[Item], feeds: Collection[str] = ()) -> dict[int, str]:
    """Item id -> section name for the items that have no topic of their own, most central
    first within each group (the overview cites those). `feeds`: the names of feed sources,
    whose items that join no group are listed under the feed's name."""
    loose = [item for item in items if not item.topic]
    telling = [item for item in loose if story_text(item).strip()]
    texts = [
        without_links(f"{_title_words(item)}\n{story_text(item)}")[:EMBEDDED_CHARS]
        for item in telling
    ]  # a link's host is no subject ("Substack")
    named: dict[int, str] = {}
    if len(telling) >= MIN_GROUP:
        vectors = features(texts)
        for name, members in named_groups(texts, vectors):
            for n in members:
                named[telling[n].id] = name
    for item in loose:
        feed = next((source for source in item.sources if source in feeds), None)
        named.setdefault(item.id, feed or ALSO_SAVED)
    return named


def _title_words(item: Item) -> str:
    """The title, or the words of a bare link's path (its host names no topic)."""
    if item.title or item.page_title or not item.url:
        return item.display_title
    path = url_title(item.url).partition("/")[2]
    return re.sub(r"[/_\-.?=&+]+", " ", path)


def named_groups(
    texts: Sequence[str], vectors: np.ndarray[Any, Any]
) -> list[tuple[str, list[int]]]:
    """(name, member indexes most central first) of each confident group, in order of their
    first member; groups that no phrase names, or whose name fewer than MIN_GROUP members
    contain, are left out."""
    groups = [g for g in join_groups(vectors @ vectors.T) if len(g) >= MIN_GROUP]
    bags = [_phrases(text) for text in texts]
    week = Counter(phrase for bag in bags for phrase in bag)
    named: list[tuple[str, list[int]]] = []
    taken: set[str] = set()
    for members in groups:
        centre = vectors[members].mean(axis=0)
        name = group_name([texts[n] for n in members], [bags[n] for n in members], week, len(texts))
        if not name or name.casefold() in taken:
            continue
        named_in = [n for n in members if _phrase_pattern(name).search(texts[n])]
        if len(named_in) >= MIN_GROUP:
            taken.add(name.casefold())
            order = sorted(members, key=lambda n: (-float(vectors[n] @ centre), n))
            named.append((name, order))
    return named


def join_groups(similarity: np.ndarray[Any, Any]) -> list[list[int]]:
    """Average-linkage clustering: the two closest groups are joined while their mean
    similarity is at least JOIN_SIMILARITY. Groups of indexes, each sorted, by first index."""
    count = len(similarity)
    links = similarity.astype(np.float64, copy=True)
    np.fill_diagonal(links, -np.inf)
    members: dict[int, list[int]] = {n: [n] for n in range(count)}
    while len(members) > 1:
        row, column = np.unravel_index(int(np.argmax(links)), links.shape)
        if links[row, column] < JOIN_SIMILARITY:
            break
        a, b = int(min(row, column)), int(max(row, column))
        size_a, size_b = len(members[a]), len(members[b])
        merged = (size_a * links[a] + size_b * links[b]) / (size_a + size_b)
        links[a, :], links[:, a] = merged, merged
        links[a, a] = -np.inf
        links[b, :], links[:, b] = -np.inf, -np.inf
        members[a] = sorted(members[a] + members.pop(b))
    return sorted(members.values())


def _phrases(text: str) -> set[str]:
    """The words and two-word phrases of a text that may name a section, lower case."""
    phrases: set[str] = set()
    for clause in _CLAUSE_END.split(text):  # "moon. Observatory" is no phrase
        tokens = [_POSSESSIVE.sub("", t.strip("'’-")) for t in re.findall(r"[\w'’-]+", clause)]
        kept = [
            t.lower() if t and is_tag_word(t) and t.lower() not in _NUMBERS else "" for t in tokens
        ]
        phrases |= {t for t in kept if t}
        phrases |= {f"{a} {b}" for a, b in zip(kept, kept[1:], strict=False) if a and b}
    return phrases


def group_name(
    texts: Sequence[str], bags: Sequence[set[str]], week: Counter[str], week_size: int
) -> str | None:
    """A phrase found in at least NAME_SHARE of the group's texts and TELLING times as often
    inside the group as in the rest of the week (what tells the group apart, as BERTopic's
    class-based TF-IDF asks) and, when a single word, rare in the rest of the week; of those
    the one the most members have, then the one closest in
    meaning to the group's texts (as KeyBERT picks), as most often written; None when no phrase is shared enough. Once
    past those thresholds the pick rests on the group's own texts only: one more item in the
    week does not rename a group that did not change."""
    inside = Counter(phrase for bag in bags for phrase in bag)
    outside = max(1, week_size - len(bags))
    shared = [
        phrase
        for phrase, n in inside.items()
        if n >= max(2, NAME_SHARE * len(bags))
        and n / len(bags) >= TELLING * (week[phrase] - n) / outside
        and (" " in phrase or week[phrase] - n < GENERIC_SHARE * outside)
    ]
    if not shared:
        return None
    closeness = embed(shared) @ embed(texts).mean(axis=0)
    score = {
        phrase: inside[phrase] / len(bags) * float(close) * (1 + (len(phrase.split()) - 1) / 2)
        for phrase, close in zip(shared, closeness, strict=True)
    }
    best = min(score, key=lambda phrase: (-inside[phrase], -score[phrase], phrase))
    return _as_written(best, texts)


def _as_written(phrase: str, texts: Sequence[str]) -> str:
    """`phrase` as the texts most often write it ("CUDA", "Rust"), its first letter upper."""
    forms = Counter(found for text in texts for found in _phrase_pattern(phrase).findall(text))
    form = min(forms, key=lambda f: (-forms[f], f)) if forms else phrase
    return " ".join(form.split())[:1].upper() + " ".join(form.split())[1:]


def _phrase_pattern(phrase: str) -> re.Pattern[str]:
    """The words of `phrase` in a text, in any case, with spaces or hyphens between them."""
    return re.compile(r"\b" + r"(?:[^\S\n]|-)+".join(map(re.escape, phrase.split())) + r"\b", re.I)


def features(texts: Sequence[str]) -> np.ndarray[Any, Any]:
    """What a text is about: its embedding (centred on the week's, so that what all items
    share does not count) beside its TF-IDF vector over the words two or more texts use;
    unit length, the two halves weighted alike."""
    meaning = embed(texts)
    meaning = _unit(meaning - meaning.mean(axis=0))
    return np.hstack([meaning, _word_vectors(texts)]) / math.sqrt(2)


def _word_vectors(texts: Sequence[str]) -> np.ndarray[Any, Any]:
    bags = [Counter(words(text)) for text in texts]
    frequency = Counter(word for bag in bags for word in bag)
    vocabulary = {word: n for n, word in enumerate(w for w, df in frequency.items() if df >= 2)}
    matrix = np.zeros((len(texts), max(1, len(vocabulary))))
    for row, bag in enumerate(bags):
        for word, count in bag.items():
            if word in vocabulary:
                idf = math.log(len(texts) / frequency[word])
                matrix[row, vocabulary[word]] = (1 + math.log(count)) * idf
    return _unit(matrix)


def _unit(matrix: np.ndarray[Any, Any]) -> np.ndarray[Any, Any]:
    norms = np.linalg.norm(matrix, axis=1, keepdims=True)
    return matrix / np.where(norms == 0, 1.0, norms)


def embed(texts: Sequence[str]) -> np.ndarray[Any, Any]:
    """Unit-length embeddings, one row per text."""
    return _unit(np.asarray(_model().embed(list(texts), norm=True), dtype=np.float64))


@cache
def _model() -> Any:
    import wordllama  # loaded on first use: importing this module stays cheap

    logging.getLogger("kmeans_logger").setLevel(logging.WARNING)
    folder = Path(wordllama.__file__).parent
    return wordllama.WordLlama.load(cache_dir=folder, disable_download=True)
