"""Whether a model's text reads as a note (pure): what small local models write instead.

Seen from real servers (Gemma 3 270M behind llama.cpp): a key point that is only "...", a
template slot ("[the user message]"), the schema's own words, one sentence six times over,
our instructions echoed back with the delimiter changed, a note about another article of the
same run, an unsubscribe footer that shares no word with the article. Each test here is a
reason to refuse such a text; the answer parser (answers.py) asks for one repair, then the
offline note stands.
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Iterable

from digest.notes.faithful import NUMBER_WORDS
from digest.text import looks_english, sentences, surely_english, without_links, words

STEM = 5  # letters of a word compared: "compilers" meets "compiler"
REPEATED_NGRAM = 10  # words in a row that a note never says twice
ECHO_NGRAM = 4  # word runs compared with the instructions
ECHO_SHARE = 0.25  # of the text's word runs found in the instructions: an echo
MIN_OWN_SHARE = 0.25  # of the text's content words that its article must hold
MIN_WORDS_TO_JUDGE = 6  # distinct content words a text and its article need to be judged
MIN_NOTE_WORDS = 4  # distinct content words a summary needs, URLs, numbers and markup aside
REPEAT_SHARE = 0.7  # of a key point's content words said already: it repeats
ENGLISH = re.compile(r"^\s*(?:en|english)\b", re.IGNORECASE)  # llm.language: English, en-GB…

# Our delimiter, or what is left of it once a model changed a character: "<<<DATA-…>>>", "<< >>".
_DELIMITER = re.compile(r"<<<?[\s\w-]{0,30}>>>?|\bDATA-[0-9a-f]{6,}", re.IGNORECASE)
# A template slot: "[…]", "[the user message]", "<summary>", "{text}".
_SLOT = re.compile(r"\[(?![\d,\s]+\])[^\[\]]{0,80}\]|<[^<>]{0,40}>|\{[^{}]{0,40}\}")
_PLACEHOLDER_WORDS = """summary summaries key point points keypoints key_points tag tags string
    strings json object array n a na none null nil todo tbd here is are your the an insert
    placeholder lorem ipsum etc"""
SLOT_FILLER_WORDS = 3  # "Compilers: […]": a slot with at most this many words around it


PLACEHOLDER_WORDS = frozenset(_PLACEHOLDER_WORDS.split())
# What is left of JSON or code: braces, a quoted key, an arrow, a call
_CODE = re.compile(r"[{}]|\"[^\"]{1,40}\"\s*:|=>|\w\(\)")
_MARKUP = re.compile(r"</?[a-zA-Z][^<>]{0,200}>|[*_`#>|~]+")
_HANDLE = re.compile(r"(?<!\w)@\w+")


def stems(text: str) -> frozenset[str]:
    """The content words of a text, by their first letters."""
    return frozenset(word[:STEM] for word in words(text))


def is_placeholder(text: str) -> bool:
    """Only dots, an ellipsis, template slots, "N/A", or the schema's own words."""
    bare = re.sub(r"[\W_]+", " ", _SLOT.sub(" ", text)).lower().split()
    if _SLOT.search(text) and len(bare) <= SLOT_FILLER_WORDS:
        return True
    return all(word in PLACEHOLDER_WORDS for word in bare)


def content_words(text: str) -> frozenset[str]:
    """The distinct content words of a text once URLs, handles, numbers and markup are set
    aside."""
    found = words(_HANDLE.sub(" ", _MARKUP.sub(" ", without_links(text))))
    return frozenset(word for word in found if word not in NUMBER_WORDS)


def wordless(text: str, title: str = "") -> str | None:
    """Why the text says nothing a reader could use, or None: it is JSON or code, it has
    fewer than MIN_NOTE_WORDS content words, or every one of them is its title's."""
    if _CODE.search(text):
        return "it is JSON or code, not sentences"
    said = content_words(text)
    if len(said) < MIN_NOTE_WORDS:
        return f"it has {len(said)} content words, a note needs {MIN_NOTE_WORDS}"
    if title and stems(" ".join(said)) <= stems(title):
        return "it only repeats the title"
    return None


def repeats(point: str, said: Iterable[str]) -> bool:
    """Whether most of a key point's content words were said already, by the texts before it
    together (a point joining two earlier ones says nothing new; a point of one word may
    name what the summary says at length)."""
    own = stems(point)
    before = frozenset().union(*(stems(text) for text in said))
    return len(own) > 1 and len(own & before) >= REPEAT_SHARE * len(own)


def is_repetitive(text: str) -> bool:
    """A sentence said twice, or a long run of words said twice."""
    said = Counter(" ".join(_tokens(sentence)) for sentence in sentences(text))
    if any(count > 2 or (count > 1 and len(line.split()) >= 3) for line, count in said.items()):
        return True
    return any(count > 1 for count in Counter(_ngrams(_tokens(text), REPEATED_NGRAM)).values())


def echoes(text: str, instructions: str) -> bool:
    """Whether the text holds our delimiter, even changed, or a share of its word runs comes
    from our instructions (an echo with a word changed is an echo still)."""
    if _DELIMITER.search(text):
        return True
    runs = set(_ngrams(_tokens(text), ECHO_NGRAM))
    if not runs:
        return False
    shared = runs & set(_ngrams(_tokens(instructions), ECHO_NGRAM))
    return len(shared) >= 2 and len(shared) / len(runs) >= ECHO_SHARE


def off_topic(
    text: str,
    own: frozenset[str],
    others: Iterable[frozenset[str]] = (),
    *,
    title: frozenset[str] = frozenset(),
    translated: bool = False,
) -> str | None:
    """Why the text is not about its article (`own`, its content stems), or None: it shares
    too few content words with it, or more with another article of the run (`others`), or
    none beyond the article's `title`. A `translated` text needs only one in common."""
    said = stems(text)
    if len(own) < MIN_WORDS_TO_JUDGE or not said:
        return None
    mine = len(said & own)
    if mine and not said & own - title and len(own - title) >= MIN_WORDS_TO_JUDGE:
        return "it says nothing of the text beyond its title"
    few = not translated and len(said) >= MIN_WORDS_TO_JUDGE and mine / len(said) < MIN_OWN_SHARE
    if any(len(said & other) > mine for other in others):
        return "it is more about another article of this run than about this text"
    if mine == 0 or few:
        return "it shares too few words with the text: not about it"
    return None


def wrong_language(text: str, language: str) -> bool:
    """Not English where English was asked for, or English where another language was."""
    if ENGLISH.match(language):
        return not looks_english(text)
    return surely_english(text)


def _tokens(text: str) -> list[str]:
    return re.findall(r"[^\W_]+", text.lower())


def _ngrams(tokens: list[str], size: int) -> list[tuple[str, ...]]:
    return [tuple(tokens[i : i + size]) for i in range(len(tokens) - size + 1)]
