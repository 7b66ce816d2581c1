"""Whether what a model says its article says is in the article (pure).

Small instruction-tuned models write fluent notes that add years, names, places and numbers
their article never says. The checkable facts of a sentence are looked up in the article's
text (its title included), case aside: numbers, however written ("2,000" is 2000, "two" is 2,
"£2.5bn" is 2.5 billion, "40 per cent" is 40), and names (capitalised words inside a sentence,
each word of a run of them; an acronym may stand for a run of the article's words, "UK" for
"United Kingdom"), and blanks a model left unfilled ("[insert date]"). A sentence holding a
fact the article lacks is dropped (`check`); the
answer parser (answers.py) refuses a note when too little is left.

Written so that summaries people write pass (bench/judging.py measures it): a name may be a
form of an article's word ("Australian" for "Australia"), "one", "first" and "second" are not
checked (a pronoun, an order, a unit of time), and a sentence's first word is not a name.
"""

from __future__ import annotations

import functools
import re
from collections.abc import Iterator
from dataclasses import dataclass

NAME_STEM = 5  # letters a name shares with an article's word: "Australian", "Australia"
ACRONYM_RUN = 5  # most words an acronym stands for

_UNITS = """zero one two three four five six seven eight nine ten eleven twelve thirteen
    fourteen fifteen sixteen seventeen eighteen nineteen"""
_TENS = "twenty thirty forty fifty sixty seventy eighty ninety"
_ORDINALS = """third fourth fifth sixth seventh eighth ninth tenth eleventh twelfth thirteenth
    fourteenth fifteenth sixteenth seventeenth eighteenth nineteenth twentieth"""
NUMBER_WORDS: dict[str, float] = {
    **{word: float(n) for n, word in enumerate(_UNITS.split())},
    **{word: float(20 + 10 * n) for n, word in enumerate(_TENS.split())},
    **{word: float(3 + n) for n, word in enumerate(_ORDINALS.split())},
    "dozen": 12.0,
}
SCALES = {
    "hundred": 1e2,
    "thousand": 1e3,
    "k": 1e3,
    "million": 1e6,
    "m": 1e6,
    "mn": 1e6,
    "billion": 1e9,
    "bn": 1e9,
    "b": 1e9,
    "trillion": 1e12,
    "tn": 1e12,
}
UNCHECKED_NUMBERS = frozenset({1.0})  # "one of them", "first", "1 in 3" says nothing to look up

_NUMBER_WORD = "|".join(sorted(NUMBER_WORDS, key=len, reverse=True))
_SCALE = r"(?:\s*(?:hundred|thousand|million|billion|trillion)\b|(?:k|m|mn|bn|b|tn)\b)?"
# digits ("2,000", "2.5", "1990s", "3rd") or number words ("twenty-five", "two"), then a scale
_NUMBER = re.compile(
    rf"""(?<![\w.,])(?P<digits>\d{{1,3}}(?:,\d{{3}})+(?:\.\d+)?|\d+(?:\.\d+)?)(?:st|nd|rd|th|s)?
         (?P<scale>{_SCALE})
       | \b(?P<words>(?:{_NUMBER_WORD})(?:[\s-](?:{_NUMBER_WORD}))*)\b
         (?P<wscale>{_SCALE})""",
    re.IGNORECASE | re.VERBOSE,
)
_TOKEN = re.compile(r"[^\W\d_][\w'’.-]*[^\W_]|[^\W\d_]")
_OPENER = re.compile(r"[\"'“‘(\[:;—–-]\s*$")  # what a word after which starts afresh ends with
_DEMONYM = re.compile(r"(?:ish|ian|ean|an|ese|i|n)$")
NOT_NAMES = frozenset({"i", "i'm", "i've", "i'd", "i'll", "ok"})
# A blank left unfilled, "[insert date]", "[company's name]", "{city}": a fact the note lacks
# unless the article has the same brackets ("[sic]", "[the minister]" in a quote). A
# citation such as "[1]" or an ellipsis "[…]" holds no letter; "[a link](…)" is none.
_BLANK = re.compile(
    r"\[[^\[\]]{0,80}?[^\W\d_][^\[\]]{0,80}\](?!\()|\{[^{}]{0,40}?[^\W\d_][^{}]{0,40}\}"
)


@dataclass(frozen=True)
class Known:
    """What an article says that a note may repeat: its numbers, words and acronyms."""

    numbers: frozenset[float]
    words: frozenset[str]
    stems: frozenset[str]
    initials: frozenset[str]
    blanks: frozenset[str] = frozenset()  # its bracketed words, lower case


@dataclass(frozen=True)
class Checked:
    """A text's sentences: those kept, and those dropped with the facts the article lacks."""

    kept: tuple[str, ...]
    dropped: tuple[tuple[str, tuple[str, ...]], ...]

    @property
    def text(self) -> str:
        return " ".join(self.kept)

    def missing(self) -> list[str]:
        """The facts that were not found, each once, in the order said."""
        return list(dict.fromkeys(fact for _sentence, facts in self.dropped for fact in facts))


@functools.lru_cache(maxsize=64)
def known_facts(article: str) -> Known:
    """The facts an article holds (its title should be part of `article`)."""
    lowered = [word for word in map(_word, _TOKEN.findall(article)) if word]
    initials: set[str] = set()
    firsts = [word[0] for word in lowered]
    for size in range(2, ACRONYM_RUN + 1):
        initials.update("".join(firsts[i : i + size]) for i in range(len(firsts) - size + 1))
    return Known(
        numbers=frozenset(value for _said, values in _numbers(article) for value in values),
        words=frozenset(lowered) | {part for word in lowered for part in word.split("-")},
        stems=frozenset(word[:NAME_STEM] for word in lowered if len(word) >= NAME_STEM),
        initials=frozenset(initials),
        blanks=frozenset(blank.lower() for blank in _BLANK.findall(article)),
    )


def unknown_facts(sentence: str, known: Known, *, with_names: bool = True) -> list[str]:
    """The blanks, numbers and names of `sentence` (as written) that the article does not hold (a
    note in another language is checked for numbers only: German writes nouns capitalised,
    and a name may be spelled otherwise)."""
    allowed = known.numbers | UNCHECKED_NUMBERS
    missing = [blank for blank in _BLANK.findall(sentence) if blank.lower() not in known.blanks]
    missing += [said for said, values in _numbers(sentence) if not values & allowed]
    if with_names:
        missing += [name for name in names(sentence) if not _known_name(name, known)]
    return missing


def check(sentences: list[str], known: Known, *, with_names: bool = True) -> Checked:
    """The sentences whose facts the article holds, and those dropped with what it lacks."""
    kept: list[str] = []
    dropped: list[tuple[str, tuple[str, ...]]] = []
    for sentence in sentences:
        if missing := unknown_facts(sentence, known, with_names=with_names):
            dropped.append((sentence, tuple(missing)))
        else:
            kept.append(sentence)
    return Checked(tuple(kept), tuple(dropped))


def names(sentence: str) -> list[str]:
    """Runs of capitalised words inside a sentence (not its first word, nor a word that opens
    a quote or a clause after a colon): the names it says."""
    runs: list[list[str]] = []
    run_end: int | None = None  # where the run the next word may extend ends
    for index, match in enumerate(_TOKEN.finditer(sentence)):
        word = _bare(match.group())
        opens = index == 0 or bool(_OPENER.search(sentence[: match.start()]))
        if opens or not word or not word[0].isupper() or word.lower() in NOT_NAMES:
            run_end = None
            continue
        if run_end is not None and sentence[run_end : match.start()].isspace():
            runs[-1].append(word)
        else:
            runs.append([word])
        run_end = match.end()
    return [" ".join(run) for run in runs]


def _known_name(name: str, known: Known) -> bool:
    """Every word of the name is the article's (or a form of one: "English", "England"), or
    stands in a run of words whose initials the article says ("United States" for "US"), or
    is an acronym of a run of the article's words ("UK" for "United Kingdom")."""
    said = [word for word in re.split(r"[\s-]+", name) if _word(word)]
    parts = [_word(word) for word in said]
    start = 0
    while start < len(parts):
        if _known_word(parts[start], known):
            start += 1
            continue
        ends = range(len(parts), start + 1, -1)
        end = next((e for e in ends if _initials(parts[start:e]) in known.words), None)
        if end is None:
            if not _acronym(said[start], known):
                return False
            end = start + 1
        start = end
    return True


def _acronym(said: str, known: Known) -> bool:
    letters = _word(said)
    return (
        said.replace(".", "").isupper()
        and 2 <= len(letters) <= ACRONYM_RUN
        and (letters in known.initials)
    )


def _initials(words: list[str]) -> str:
    return "".join(word[0] for word in words)


def _word(token: str) -> str:
    """A word as looked up: lower case, no possessive, no dots ("U.S." is "us")."""
    return _bare(token).lower().replace(".", "")


def _known_word(word: str, known: Known) -> bool:
    if word in known.words or word[:NAME_STEM] in known.stems:
        return True
    root = _DEMONYM.sub("", word)  # "English": "Engl"; "British": "Brit"
    return len(root) >= 4 and root != word and any(w.startswith(root) for w in known.words)


def _bare(token: str) -> str:
    """A word without its possessive and the dots around it: "Lennon's" is "Lennon"."""
    return re.sub(r"['’]s$", "", token).strip(".'’-")


def _numbers(text: str) -> Iterator[tuple[str, frozenset[float]]]:
    """Each number in the text as written, with the values it may stand for (with and without
    its scale: "2.5m" is 2.5 and 2,500,000)."""
    for match in _NUMBER.finditer(text):
        value: float | None
        if match.group("digits"):
            value = float(match.group("digits").replace(",", ""))
            scale = match.group("scale")
        else:
            value = _words_value(match.group("words"))
            scale = match.group("wscale")
        if value is None:
            continue
        factor = SCALES.get((scale or "").strip().lower(), 1.0)
        yield match.group().strip(), frozenset({value, round(value * factor, 6)})


def _words_value(said: str) -> float | None:
    """ "twenty-five" is 25, "two hundred" is 200 (scales handled by the caller)."""
    parts = re.split(r"[\s-]+", said.lower())
    values = [NUMBER_WORDS[part] for part in parts if part in NUMBER_WORDS]
    if len(values) != len(parts):
        return None
    return sum(values)
