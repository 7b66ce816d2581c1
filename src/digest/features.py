"""What sections, stories and the ranking read of an item, computed once per text (pure).

`text_features(text)` reads a text once, when it is stored (the fetch stage, with the page
just extracted; compose, in memory only, for a text it finds without them, such as a post's
own): the sum of
its WordLlama token embeddings and their count (what it is about: their mean), its content
words with their counts (TF-IDF for stories and sections) and the words and pairs of words
that may name a section, as 64-bit hashes. Compose then reads vectors and hashes, never 5 MB
of text. WordLlama's tokenizer and embedding table are loaded from the files its wheel ships
(downloads never happen), without importing the package (which loads an HTTP client):
nothing leaves the machine, and a process that embeds holds ~40 MB for it, not ~100.
"""

from __future__ import annotations

import hashlib
import importlib.util
import re
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass, replace
from functools import cache
from pathlib import Path
from typing import Any

import numpy as np

from digest.models import Extracted, Item, ItemKind, TextFeatures
from digest.tagwords import is_tag_word
from digest.text import url_title, without_links, words
from digest.unfetched import offline_stand_in, saved_words

TEXT_CHARS = 5_000  # a page's opening tells its story (and what it is about): compose reads no more
VERSION = "1"  # part of every text hash: a change to what is computed here renews them all
_CLAUSE_END = re.compile(r"[^\w\s'’-]|\n")
_POSSESSIVE = re.compile(r"['’]s$", re.I)
_PHRASE_TOKEN = re.compile(r"[\w'’-]+")
_NUMBER_WORDS = """one two three four five six seven eight nine ten eleven twelve twenty hundred
    thousand million billion first second third last"""
_UNIT_WORDS = "second minute hour day week month year time"
_UNITS = [unit + plural for unit in _UNIT_WORDS.split() for plural in ("", "s")]
_NUMBERS = frozenset(_NUMBER_WORDS.split() + _UNITS)  # counts, ranks, units of time: no subject


def story_text(item: Item) -> str:
    """What an item says: the opening of its page (a post's own text), else its note (unless
    it only restates a link never read), else what was saved with it."""
    page = item.context if item.kind is ItemKind.POST else item.text
    note = item.note.summary if item.note and not offline_stand_in(item) else ""
    return (page or note or saved_words(item) or "")[:TEXT_CHARS]


def feature_text(item: Item) -> str:
    """What an item is about as sections, stories and the ranking read it: its title (a bare
    link's path words: its host names no subject) and its story."""
    return f"{title_words(item)}\n{story_text(item)}"


def title_words(item: Item) -> str:
    """The title part of `feature_text` (its words and the story's are read apart: no word
    spans the line between them)."""
    if item.title or item.page_title or not item.url:
        return item.display_title
    path = url_title(item.url).partition("/")[2]
    return re.sub(r"[/_\-.?=&+]+", " ", path)


def text_hash(text: str) -> str:
    return hashlib.blake2b(f"{VERSION}\n{text}".encode(), digest_size=16).hexdigest()


def text_features(text: str) -> TextFeatures:
    """Everything compose reads of `text` (see the module's docstring). Pure and picklable:
    a worker process may call it."""
    said = read(text)
    ids = _token_ids([said])[0]
    counts = Counter(words(said))
    hashed = sorted((word_hash(word), count) for word, count in counts.items())
    return TextFeatures(
        text_hash=text_hash(text),
        tokens=len(ids),
        vector=_summed(ids).tobytes(),
        terms=np.array([h for h, _ in hashed], dtype=np.int64).tobytes(),
        counts=np.array([c for _, c in hashed], dtype=np.int32).tobytes(),
        phrases=np.array(sorted(map(phrase_hash, phrases(said))), dtype=np.int64).tobytes(),
    )


def read(text: str) -> str:
    """What of a text its features are made of: its opening, without links (a link's host
    is no subject: "Substack")."""
    return without_links(text)[:TEXT_CHARS]


def features_of(items: Sequence[Item]) -> list[TextFeatures]:
    """Each item's stored features, or computed now for an item that has none."""
    return [item.features or text_features(feature_text(item)) for item in items]


def word_hash(word: str) -> int:
    return int.from_bytes(hashlib.blake2b(word.encode(), digest_size=8).digest(), signed=True)


def phrase_hash(phrase: str) -> int:
    """The phrase's hash, odd for a pair of words: a name's kind is read off its hash."""
    return (word_hash(phrase) & ~1) | (" " in phrase)


def phrases(text: str) -> set[str]:
    """The words and two-word phrases of a text that may name a section, lower case."""
    found: set[str] = set()
    kept_as: dict[str, str] = {}  # each token as written, judged once: words recur
    for clause in _CLAUSE_END.split(text):  # "moon. Observatory" is no phrase
        kept = []
        for token in _PHRASE_TOKEN.findall(clause):
            if (word := kept_as.get(token)) is None:
                word = kept_as[token] = _phrase_word(_POSSESSIVE.sub("", token.strip("'’-")))
            kept.append(word)
        found.update(word for word in kept if word)
        found.update(f"{a} {b}" for a, b in zip(kept, kept[1:], strict=False) if a and b)
    return found


def _phrase_word(token: str) -> str:
    """The token in lower case if it may be (part of) a section's name, else ""."""
    return token.lower() if token and is_tag_word(token) and token.lower() not in _NUMBERS else ""


@dataclass(frozen=True)
class Terms:
    """The content words of some texts: one entry per text and word it uses (by text, then by
    the word's hash), and per word of them all its hash and how many of the texts use it."""

    rows: np.ndarray[Any, Any]  # the text
    words: np.ndarray[Any, Any]  # the word: an index into `hashes` and `df`
    counts: np.ndarray[Any, Any]  # how often the text uses it
    hashes: np.ndarray[Any, Any]
    df: np.ndarray[Any, Any]

    def of(self, row: int) -> slice:
        """Where text `row`'s entries are."""
        start, end = np.searchsorted(self.rows, [row, row + 1])
        return slice(int(start), int(end))


def terms_of(features: Sequence[TextFeatures]) -> Terms:
    hashed = [np.frombuffer(f.terms, dtype=np.int64) for f in features]
    counts = [np.frombuffer(f.counts, dtype=np.int32) for f in features]
    rows = np.repeat(np.arange(len(features)), [len(h) for h in hashed])
    every = np.concatenate([np.zeros(0, dtype=np.int64), *hashed])
    hashes, df = np.unique(every, return_counts=True)
    words = np.searchsorted(hashes, every)  # faster than np.unique's inverse (an argsort)
    used = np.concatenate([np.zeros(0, dtype=np.int32), *counts]).astype(np.float64)
    return Terms(rows, words, used, hashes, df)


def meanings(features: Sequence[TextFeatures]) -> np.ndarray[Any, Any]:
    """Unit-length mean embeddings, one row per text (a text with no token: zeros)."""
    if not features:
        return np.zeros((0, _table().shape[1]), dtype=np.float32)
    sums = np.vstack([np.frombuffer(f.vector, dtype=np.float32) for f in features])
    tokens = np.array([max(1, f.tokens) for f in features], dtype=np.float32)
    return unit(sums / tokens[:, None])


def embed(texts: Sequence[str]) -> np.ndarray[Any, Any]:
    """Unit-length mean embeddings of short texts (interests, names), one row per text."""
    ids = _token_ids(list(texts))
    sums = np.vstack([_summed(row) / max(1, len(row)) for row in ids]) if ids else None
    return unit(sums) if sums is not None else meanings(())


def unit(matrix: np.ndarray[Any, Any]) -> np.ndarray[Any, Any]:
    norms = np.linalg.norm(matrix, axis=1, keepdims=True)
    return matrix / np.where(norms == 0, 1.0, norms)


def _summed(ids: np.ndarray[Any, Any]) -> np.ndarray[Any, Any]:
    return np.asarray(_table()[ids].sum(axis=0, dtype=np.float32))


def _token_ids(texts: list[str]) -> list[np.ndarray[Any, Any]]:
    """WordLlama's token ids of each text, as its `embed` reads them (no special tokens, no
    padding, no truncation; an id past the table is its last row)."""
    last = _table().shape[0] - 1
    encoded = _tokenizer().encode_batch(texts, add_special_tokens=False)
    return [np.minimum(np.array(e.ids, dtype=np.int64), last) for e in encoded]


def load_tables() -> None:
    """Load what embedding reads now rather than on first use (a process that forks workers
    which embed loads it once for all of them)."""
    _tokenizer()
    _table()


@cache
def _tokenizer() -> Any:
    from tokenizers import Tokenizer  # loaded on first use: importing this stays cheap

    tokenizer = Tokenizer.from_file(str(_wordllama_file("tokenizers", _TOKENIZER)))
    tokenizer.no_padding()
    tokenizer.no_truncation()
    return tokenizer


@cache
def _table() -> np.ndarray[Any, Any]:
    """The token embeddings (32,000 × 256, float16 as shipped: 16 MB)."""
    from safetensors.numpy import load_file

    return load_file(_wordllama_file("weights", _WEIGHTS))["embedding.weight"]


_TOKENIZER = "l2_supercat_tokenizer_config.json"  # WordLlama's default model, 256 dimensions
_WEIGHTS = "l2_supercat_256.safetensors"


def _wordllama_file(*parts: str) -> Path:
    spec = importlib.util.find_spec("wordllama")  # found, not imported
    assert spec is not None and spec.submodule_search_locations, "wordllama is a dependency"
    return Path(next(iter(spec.submodule_search_locations)), *parts)


def page_features(item: Item, page: Extracted) -> TextFeatures:
    """The features of `item` once `page` is its text: what the fetch stage stores with it."""
    fetched = replace(item, text=page.text, extracted_title=page.title, quality=page.quality)
    return text_features(feature_text(fetched))
