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
word that much of the rest of the week also has ("model"). Two items no group took join
when they are parts of one series or share a subject word written as a name in a title
("DNS"; `subject_pairs`). Items of a feed that joined no group go under the feed's name; the others under ALSO_SAVED. Deterministic.
"""

from __future__ import annotations

import math
import re
from collections import Counter
from collections.abc import Collection, Sequence
from typing import Any

import numpy as np

from digest.compose.related import series_key
from digest.features import (
    embed,
    feature_text,
    features_of,
    meanings,
    phrase_hash,
    phrases,
    read,
    story_text,
    terms_of,
    title_words,
    unit,
)
from digest.models import Item, TextFeatures
from digest.text import STOPWORDS, words

ALSO_SAVED = "Also saved"
_PART_WORDS = "day days part week episode chapter lesson no number vol volume"
_NUMBERS = frozenset(_PART_WORDS.split())  # "Day 83 of …": what counts the parts, not the subject
JOIN_SIMILARITY = 0.1  # mean feature cosine under which two groups are not joined
MIN_GROUP = 3  # fewer items are no section of their own ...
SUBJECT_SAYINGS = 3  # ... unless they say a word rare in the week this often (subject_pairs)
# An item left out of every group joins the one whose centre it is this close to (chosen on
# the even rows of bbc-dev, reported on the odd ones and on AG News: bench/topics.py) ...
ATTACH_SIMILARITY: float | None = 0.1
ATTACH_SHARE = 0.5  # ... up to this share of the group's size
NAME_SHARE = 0.5  # a section's name is found in at least this share of its items
GENERIC_SHARE = 0.25  # a single word in this share of the rest of the week names no group
TELLING = 3  # a name is this many times as common in its group as in the rest of the week
WRITTEN_FROM = 20  # a name is spelled as most of the first texts that have it write it
WORD_CELLS = 2_000_000  # TF-IDF matrix: past this many cells, words share columns ...
FOLDED_WORDS = 1024  # ... this many at least (1,000 items: 2,000)


def offline_sections(items: Sequence[Item], feeds: Collection[str] = ()) -> dict[int, str]:
    """Item id -> section name for the items that have no topic of their own, most central
    first within each group (the overview cites those). `feeds`: the names of feed sources,
    whose items that join no group are listed under the feed's name."""
    loose = [item for item in items if not item.topic]
    telling = [item for item in loose if story_text(item).strip()]
    named: dict[int, str] = {}
    if len(telling) >= MIN_GROUP:
        texts = [feature_text(item) for item in telling]
        features = features_of(telling)
        vectors = item_vectors(features)
        groups = named_groups(texts, features, vectors)
        for name, members in _with_close_items(groups, vectors):
            for n in members:
                named[telling[n].id] = name
    named |= series_sections([item for item in loose if item.id not in named])
    named |= subject_pairs([item for item in loose if item.id not in named], items)
    for item in loose:
        feed = next((source for source in item.sources if source in feeds), None)
        named.setdefault(item.id, feed or ALSO_SAVED)
    return named


def series_sections(items: Sequence[Item]) -> dict[int, str]:
    """Two or more parts of one series ("Day 83/365 of GPU Programming", "Day 124/365 of
    GPU Programming"): a section named by what the titles share ("GPU Programming")."""
    parts: dict[str, list[Item]] = {}
    for item in items:
        if (key := series_key(item.display_title)) is not None:
            parts.setdefault(key, []).append(item)
    named: dict[int, str] = {}
    for members in parts.values():
        name = _series_name(members[0].display_title)
        if len(members) >= 2 and name:
            named |= {item.id: name for item in members}
    return named


def subject_pairs(items: Sequence[Item], week: Sequence[Item]) -> dict[int, str]:
    """Items no group took that share a subject word ("DNS"): each has it in its own title
    (not its address) or says it SUBJECT_SAYINGS times, a title writes it as a name, and
    fewer of the week's other items use it than these: a section named by the word, as they
    write it. The rarest words first; an item joins one such section."""
    names = {item.id: _written_as_names(_own_title(item)) for item in items}
    naming = set().union(*names.values())  # no other word can name a section
    if not naming:
        return {}
    said = {item.id: _story_words(item) for item in items}
    having = _subject_words(items, said, naming)
    if not having:
        return {}
    # words(feature_text) is its title's words then its story's: no word spans their line
    used = {
        item.id: set(words(title_words(item))).union(
            said[item.id] if item.id in said else _story_words(item)
        )
        for item in week
    }
    using: Counter[str] = Counter()  # how many of the week's items use each word
    for found in used.values():
        using.update(found)
    named: dict[int, str] = {}
    for word, members in sorted(having.items(), key=lambda pair: (len(pair[1]), pair[0])):
        members = [item for item in members if item.id not in named]
        ids = {item.id for item in members}
        elsewhere = using[word] - sum(word in used[n] for n in ids if n in used)
        named_so = any(word in names[item.id] for item in members)
        if len(members) >= 2 and named_so and elsewhere < len(members):
            name = _as_written(word, [feature_text(item) for item in members])
            named |= {item.id: name for item in members}
    return named


def _story_words(item: Item) -> list[str]:
    return words(story_text(item))


def _subject_words(
    items: Sequence[Item], said: dict[int, list[str]], naming: set[str]
) -> dict[str, list[Item]]:
    """Each word that may name a subject section, with the items that have it in their own
    title or say it SUBJECT_SAYINGS times. Only a word some title writes as a name (`naming`)
    can name one."""
    having: dict[str, list[Item]] = {}
    for item in items:
        times = Counter(said[item.id])
        titled = set(words(_own_title(item)))
        for word in titled | {w for w, count in times.items() if count >= SUBJECT_SAYINGS}:
            if len(word) >= 3 and word not in _NUMBERS and word in naming:
                having.setdefault(word, []).append(item)
    return having


def _written_as_names(title: str) -> set[str]:
    """The title's words written with a capital past its first word ("about DNS resolvers",
    "in Rust"), lower-cased: names, not words of any subject ("how it works")."""
    found = re.findall(r"[\w'’-]+", title)[1:]
    return {w.casefold() for w in found if w[:1].isupper()}


def _own_title(item: Item) -> str:
    """The title the item was saved or read with; "" for a link named by its address."""
    return item.title or item.page_title or ""


def _series_name(title: str) -> str:
    """The words of a numbered title after its numbers: "GPU Programming"."""
    tail = re.split(r"\S*\d\S*", " ".join(title.split()))[-1]
    words = tail.strip(" .:;,-–—").split()
    while words and (words[0].casefold() in STOPWORDS or words[0].casefold() in _NUMBERS):
        words.pop(0)
    return " ".join(words) if len(words) >= 1 and len(" ".join(words)) >= 3 else ""


def _with_close_items(
    groups: list[tuple[str, list[int]]], vectors: np.ndarray[Any, Any]
) -> list[tuple[str, list[int]]]:
    """The groups, each joined by the items left out of every group that are close to its
    centre (ATTACH_SIMILARITY: they clearly share its subject), at most ATTACH_SHARE of its
    size, so that most of its items still contain its name; the closest first."""
    if not groups or ATTACH_SIMILARITY is None:
        return groups
    grouped = {n for _, members in groups for n in members}
    left = [n for n in range(len(vectors)) if n not in grouped]
    if not left:
        return groups
    centres = unit(np.vstack([vectors[members].mean(axis=0) for _, members in groups]))
    closeness = vectors[left] @ centres.T
    joined: list[list[int]] = [[] for _ in groups]
    for row in np.argsort(-closeness.max(axis=1), kind="stable"):
        best = int(closeness[row].argmax())
        room = int(ATTACH_SHARE * len(groups[best][1]))
        if closeness[row, best] >= ATTACH_SIMILARITY and len(joined[best]) < room:
            joined[best].append(left[row])
    return [(name, members + extra) for (name, members), extra in zip(groups, joined, strict=True)]


def named_groups(
    texts: Sequence[str], features: Sequence[TextFeatures], vectors: np.ndarray[Any, Any]
) -> list[tuple[str, list[int]]]:
    """(name, member indexes most central first) of each confident group, in order of their
    first member; groups that no phrase names, or whose name fewer than MIN_GROUP members
    contain, are left out. `texts`: what `features` were computed from; `vectors`: their
    item_vectors."""
    groups = [g for g in join_groups(vectors @ vectors.T) if len(g) >= MIN_GROUP]
    bags = [np.frombuffer(f.phrases, dtype=np.int64) for f in features]
    week = np.unique(np.concatenate([np.zeros(0, dtype=np.int64), *bags]), return_counts=True)
    meaning = meanings(features)
    named: list[tuple[str, list[int]]] = []
    taken: set[str] = set()
    for members in groups:
        found = [bags[n] for n in members]
        centre = meaning[members].mean(axis=0)
        picked = group_name(found, week, len(texts), centre, [texts[n] for n in members])
        if not picked:
            continue
        phrase, having = picked
        name = _as_written(phrase, [read(texts[members[k]]) for k in having[:WRITTEN_FROM]])
        if len(having) >= MIN_GROUP and name.casefold() not in taken:
            taken.add(name.casefold())
            centre = vectors[members].mean(axis=0)
            order = sorted(members, key=lambda n: (-float(vectors[n] @ centre), n))
            named.append((name, order))
    return named


def join_groups(similarity: np.ndarray[Any, Any]) -> list[list[int]]:
    """Average-linkage clustering: the two closest groups are joined while their mean
    similarity is at least JOIN_SIMILARITY. Groups of indexes, each sorted, by first index.

    Found by nearest-neighbour chains (a group's closest, that one's closest, ... until two
    are each other's closest: those two are joined), which joins what joining the closest
    pair of all each time would, in O(n²) instead of O(n³): average linkage never brings
    a group closer to the others than its parts were, so a group whose closest is under
    the threshold is final."""
    links = similarity.astype(np.float64, copy=True)
    np.fill_diagonal(links, -np.inf)
    members: dict[int, list[int]] = {n: [n] for n in range(len(links))}
    final: list[list[int]] = []
    chain: list[int] = []
    while members:
        if not chain:
            chain.append(next(iter(members)))
        a = chain[-1]
        b = int(np.argmax(links[a]))
        if len(chain) > 1 and links[a, chain[-2]] >= links[a, b]:
            b = chain[-2]  # ties: back along the chain, so that it ends
        if links[a, b] < JOIN_SIMILARITY:
            final.append(members.pop(chain.pop()))
            links[a, :], links[:, a] = -np.inf, -np.inf
        elif len(chain) > 1 and b == chain[-2]:
            chain[-2:] = []
            _join(links, members, min(a, b), max(a, b))
        else:
            chain.append(b)
    return sorted(sorted(group) for group in final)


def _join(links: np.ndarray[Any, Any], members: dict[int, list[int]], a: int, b: int) -> None:
    """Group b joins group a: a's similarity to each group, the mean over their items."""
    size_a, size_b = len(members[a]), len(members[b])
    merged = (size_a * links[a] + size_b * links[b]) / (size_a + size_b)
    links[a, :], links[:, a] = merged, merged
    links[a, a] = -np.inf
    links[b, :], links[:, b] = -np.inf, -np.inf
    members[a] += members.pop(b)


def group_name(
    bags: Sequence[np.ndarray[Any, Any]],
    week: tuple[np.ndarray[Any, Any], np.ndarray[Any, Any]],
    week_size: int,
    centre: np.ndarray[Any, Any],
    texts: Sequence[str],
) -> tuple[str, list[int]] | None:
    """A phrase found in at least NAME_SHARE of the group's texts and TELLING times as often
    inside the group as in the rest of the week (what tells the group apart, as BERTopic's
    class-based TF-IDF asks) and, when a single word, rare in the rest of the week; of those
    the one the most members have, then the one closest in meaning to the group's texts
    (`centre`: their mean embedding; as KeyBERT picks); with the indexes of the texts that
    have it. None when no phrase is shared enough. Once past those thresholds the pick rests
    on the group's own texts only: one more item in the week does not rename a group that
    did not change. `bags`: the phrase hashes of each text (features.phrases), `week`: every
    hash of the week's texts and in how many it is; `texts` are read only to spell the few
    phrases that pass."""
    hashes, inside = np.unique(np.concatenate(bags), return_counts=True)
    common = inside >= max(2, NAME_SHARE * len(bags))
    hashes, inside = hashes[common], inside[common]
    elsewhere = week[1][np.searchsorted(week[0], hashes)] - inside
    outside = max(1, week_size - len(bags))
    shared_enough = (
        (inside / len(bags) >= TELLING * elsewhere / outside)
        & (((hashes & 1) == 1) | (elsewhere < GENERIC_SHARE * outside))  # odd: two words
    )
    count = dict(zip(hashes[shared_enough].tolist(), inside[shared_enough].tolist(), strict=True))
    shared = _spelled(set(count), texts)
    if not shared:
        return None
    closeness = embed(list(shared)) @ centre
    score = {
        phrase: count[h] / len(bags) * float(close) * (1 + (len(phrase.split()) - 1) / 2)
        for (phrase, h), close in zip(shared.items(), closeness, strict=True)
    }
    best = min(score, key=lambda phrase: (-count[shared[phrase]], -score[phrase], phrase))
    return best, [k for k, bag in enumerate(bags) if _has(bag, shared[best])]


def _has(bag: np.ndarray[Any, Any], phrase: int) -> bool:
    at = int(np.searchsorted(bag, phrase))
    return at < len(bag) and int(bag[at]) == phrase


def _spelled(wanted: set[int], texts: Sequence[str]) -> dict[str, int]:
    """The phrases whose hashes are `wanted`, as found in the first texts that have them."""
    spelled: dict[str, int] = {}
    for text in texts:
        if len(spelled) == len(wanted):
            break
        spelled |= {p: h for p in phrases(read(text)) if (h := phrase_hash(p)) in wanted}
    return spelled


def _as_written(phrase: str, texts: Sequence[str]) -> str:
    """`phrase` as the texts most often write it ("CUDA", "Rust"), its first letter upper."""
    forms = Counter(found for text in texts for found in _phrase_pattern(phrase).findall(text))
    form = min(forms, key=lambda f: (-forms[f], f)) if forms else phrase
    return " ".join(form.split())[:1].upper() + " ".join(form.split())[1:]


def _phrase_pattern(phrase: str) -> re.Pattern[str]:
    """The words of `phrase` in a text, in any case, with spaces or hyphens between them."""
    return re.compile(r"\b" + r"(?:[^\S\n]|-)+".join(map(re.escape, phrase.split())) + r"\b", re.I)


def item_vectors(features: Sequence[TextFeatures]) -> np.ndarray[Any, Any]:
    """What a text is about: its embedding (centred on the week's, so that what all items
    share does not count) beside its TF-IDF vector over the words two or more texts use;
    unit length, the two halves weighted alike."""
    meaning = meanings(features)
    meaning = unit(meaning - meaning.mean(axis=0))
    halves = np.hstack([meaning.astype(np.float32), _word_vectors(features).astype(np.float32)])
    halves /= np.float32(math.sqrt(2))
    return halves


def _word_vectors(features: Sequence[TextFeatures]) -> np.ndarray[Any, Any]:
    """Each text's TF-IDF vector over the words two or more texts use, of unit length. When
    texts times words pass WORD_CELLS (a week of hundreds of pages), the words are hashed
    into fewer columns, each with a sign from its hash (the hashing trick, as scikit-learn's
    HashingVectorizer): products stay close to the cosines in a matrix of bounded size."""
    terms = terms_of(features)
    used = terms.df[terms.words] >= 2
    rows, words, counts = terms.rows[used], terms.words[used], terms.counts[used]
    weights = (1 + np.log(counts)) * np.log(len(features) / terms.df[words])
    rank = np.cumsum(terms.df >= 2) - 1  # a word's column, among the words used twice
    width = int(rank[-1:].sum()) + 1
    if len(features) * width <= WORD_CELLS:
        columns = rank[words]
    else:
        width = max(FOLDED_WORDS, WORD_CELLS // len(features))
        hashes = terms.hashes[words]
        columns = (hashes >> 1) % width
        weights = np.where(hashes & 1, weights, -weights)
    cells = rows * width + columns
    matrix = np.bincount(cells, weights, minlength=len(features) * width).astype(
        np.float64, copy=False
    )
    norms = np.sqrt(np.bincount(rows, weights**2, minlength=len(features)))
    matrix = matrix.reshape(len(features), width)
    matrix /= np.where(norms == 0, 1.0, norms)[:, None]
    return matrix
