"""What a pasted post gives a reader, read offline from its own text (pure): its list, its
named people, works and numbers, not its hook lines; without the ad lines, calls to action
and what a chatbot left in a pasted text ("Want me to lock this in?").

A model's note of a post is its own; this reading stands for the offline one, which picks
a post's "central" sentences and so, in a post written to be shared, its hooks.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from digest.notes.judging import wordless
from digest.text import is_list_line, list_item, sentences, shorten, without_links

MAX_POINTS = 6  # a post's list is kept as a short list; the rest is counted
POINT_CHARS = 140
MAX_SENTENCES = 2
SHOUTED_SHARE = 0.5  # a title with this share of its words in capitals is shouting
# In a title that does not shout, a word in capitals this long shouts ("ABSOLUTELY");
# shorter ones may be acronyms ("DGPO", "CUDA") and are kept as written.
SHOUTED_WORD = 7
PROSE_CHARS = 360  # a long post's note: its telling sentences up to about this long
# Said to sell or to make one click, not to inform.
_PROMOTION = re.compile(
    r"\b(bookmark|follow (me|us|@)|repost|retweet|like and|save (this|it)|link in (the )?(bio|"
    r"comments?|replies|reply)|sign up|subscribe|dm me|comment below|try it (before|now|today|"
    r"free|out)|see what you can build|check it out|don'?t miss|grab (it|yours)|limited time"
    r"|watch (it )?today)\b"
    r"|\bis free\b.*\b(until|for a limited)\b|[↓👇👉]\s*$",
    re.IGNORECASE,
)
# What a chatbot leaves in a text pasted from it.
_LEFTOVER = re.compile(
    r"\b(want me to|would you like me to|shall i|let me know if you|i can also|happy to help"
    r"|hope this helps|no fluff|every (pointer|point|bullet|line) is now|lock this in"
    r"|as an ai language model)\b",
    re.IGNORECASE,
)
# A line written to hook, not to tell: sweeping words and no name or number to hold.
_HOOK = re.compile(
    r"\b(never|always|everything|nothing|nobody|everyone|most (people|devs|developers)"
    r"|the ones who|secretly|the real|reads like|the scary part|one idea|one thing|here'?s "
    r"(what|why|how)|this is (how|why|where|what)|that'?s (how|why)|is a legend|mind.?blown)\b",
    re.IGNORECASE,
)
_FRAGMENT = re.compile(r"^(and|but|or|so|which|then)\b|^[a-z]+\)", re.IGNORECASE)
_NAME = re.compile(r"\b[A-Z][\w'’.-]*(?:\s+(?:of\s+|&\s+)?[A-Z][\w'’.-]*)+")
_NUMBER = re.compile(r"\b\d[\d.,:%x×-]*\b")
_ODD_CASE = re.compile(r"\b(?:[A-Z]{2,}\w*|[a-z]+[A-Z]\w*)\b")  # CS107, MasterDnsVPN, vLLM
_WORD = re.compile(r"[A-Za-z][A-Za-z0-9'’]*")
# an acronym as its title defines or names it: "(DGPO)", "H100", "GPT4"
_ACRONYM = re.compile(r"\(([A-Z][A-Z0-9]{1,5})\)|\b[A-Z]+[0-9][A-Z0-9]*\b")
_CAPITALS = (
    "AI ML LLM LLMS GPU GPUS CPU TPU API SQL DNS HTTP HTML CSS PDF JAX AWS GCP UI UX OS IO"
    " CUDA RL NLP RAG JSON XML URL CLI PTX MLIR MIT CMU UCLA NASA IBM USA UK EU CEO CTO VPN"
    " SOTA KV SLI SLO SLA PHD AGI SSD RAM I"
)
_KEPT_CAPITALS = frozenset(_CAPITALS.split())
# short words that are words, not acronyms, when written in capitals ("IN 1986 MIT FILMED")
_SHOUTED_SHORT = frozenset(
    [
        "IN",
        "ON",
        "OF",
        "TO",
        "IS",
        "IT",
        "BY",
        "AN",
        "AT",
        "AS",
        "OR",
        "AND",
        "THE",
        "FOR",
        "YOU",
        "ARE",
        "HOW",
        "WHY",
        "NOT",
    ]
)


@dataclass(frozen=True)
class PostReading:
    prose: str | None  # its sentences that name people, works or numbers
    points: tuple[str, ...]  # its list, short


def post_reading(text: str, title: str, *, whole: bool = False) -> PostReading:
    """The post's prose and list after its title, told apart from its hooks and ads. `whole`
    (a short post): every sentence but hooks, ads and leftovers; else the few that tell most."""
    points: list[str] = []
    prose: list[str] = []
    for line in _after_title(text, title):
        if is_list_line(line):
            if (point := list_item(line)) and not _noise(point):
                points.append(shorten(point, POINT_CHARS))
        else:
            prose += [s for s in sentences(without_links(line)) if not _noise(s)]
    key = _comparable(title)
    prose = [_ended(s, listed=bool(points)) for s in prose if _comparable(s) not in ("", key)]
    told = " ".join(_telling([s for s in prose if s], whole=whole))
    if wordless(told, title) and not whole:  # "36 minutes.": a number, and no words
        told = " ".join(_telling([s for s in prose if s and not wordless(s)], whole=False))
    listed = [p for p in points if _comparable(p) != key]
    if len(listed) > MAX_POINTS:
        listed = [*listed[: MAX_POINTS - 1], f"and {len(listed) - MAX_POINTS + 1} more"]
    # a note has words, as a model's must (notes.judging): else the list, or nothing, stands
    return PostReading(None if wordless(told, title) else told, tuple(listed))


def _ended(sentence: str, *, listed: bool) -> str:
    """A sentence that opens a list ("It touches on:") says nothing once the list is shown;
    with no list after it, it ends on a full stop."""
    if not sentence.rstrip().endswith(":"):
        return sentence
    return "" if listed else sentence.rstrip().rstrip(":") + "."


def readable_title(title: str) -> str:
    """A post's title without a trailing colon, its shouted words in lower case (all its
    words when it shouts as a whole), acronyms kept: "MIT's absolutely free books",
    "Policy Optimization (DGPO)", "H100"."""
    title = title.rstrip().rstrip(":;,").rstrip()
    words = _WORD.findall(title)
    shouted = [w for w in words if len(w) > 1 and w.isupper()]
    shouts = len(words) >= 3 and len(shouted) >= SHOUTED_SHARE * len(words)
    shortest = 1 if shouts else SHOUTED_WORD
    kept = {m.span(1) if m[1] else m.span() for m in _ACRONYM.finditer(title)}
    lowered = _WORD.sub(lambda m: m[0] if m.span() in kept else _lowered(m[0], shortest), title)
    return lowered[:1].upper() + lowered[1:] if lowered != title else title


def _lowered(word: str, shortest: int) -> str:
    base = re.sub(r"['’]s$", "", word)
    long_enough = len(base) >= shortest or base in _SHOUTED_SHORT
    shouting = long_enough and base.isupper() and base not in _KEPT_CAPITALS
    return word.lower() if shouting else word


def _after_title(text: str, title: str) -> list[str]:
    """The post's lines after its title: the rest of the title's line kept, after the
    sentence a shortened title ("…") stands for."""
    lines = [" ".join(line.split()) for line in text.splitlines() if line.strip()]
    if not lines:
        return []
    first, key = lines[0], _comparable(title.removesuffix("…"))
    if title.endswith("…"):
        rest = " ".join(sentences(first)[1:])
    elif _comparable(first).startswith(key) and len(_comparable(first)) > len(key):
        rest = " ".join(
            sentence for sentence in sentences(first) if _comparable(sentence) not in key
        )
    else:
        rest = ""
    return [rest, *lines[1:]] if rest else lines[1:]


def _noise(sentence: str) -> bool:
    return bool(_PROMOTION.search(sentence) or _LEFTOVER.search(sentence))


def _telling(found: list[str], *, whole: bool) -> list[str]:
    """The sentences worth keeping, in their order: in a `whole` post every one but the
    hooks; else up to MAX_SENTENCES that name people, works or numbers (the first plain
    one when none does)."""
    scores = [_score(sentence) for sentence in found]
    if whole:
        return [s for s, score in zip(found, scores, strict=True) if score >= 0]
    best = sorted((i for i, score in enumerate(scores) if score > 0), key=lambda i: -scores[i])
    keep: list[int] = []
    for i in best[:MAX_SENTENCES]:
        if not keep or sum(len(found[k]) for k in keep) + len(found[i]) <= PROSE_CHARS:
            keep.append(i)
    keep = keep or [i for i, score in enumerate(scores) if score == 0][:1]
    return [found[i] for i in sorted(keep)]


def _score(sentence: str) -> int:
    inner = sentence.split(" ", 1)[1] if " " in sentence else ""  # the opening word is capped
    named = len(_NAME.findall(inner)) + len(_ODD_CASE.findall(sentence))
    score = 2 * named + len(_NUMBER.findall(sentence))
    if _HOOK.search(sentence):
        score -= 3
    if _FRAGMENT.match(sentence):  # "and 1) it was very wrong": the rest of a sentence
        score = -1
    return score


def _comparable(text: str) -> str:
    return " ".join(re.sub(r"[^\w\s]", " ", text).casefold().split())
