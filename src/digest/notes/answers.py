"""What a model's answers must hold, read as tolerantly as real models write them (pure).

A note is usable when it has a summary about the article: one sentence or several (past six
the rest is cut), a list of sentences, prose where JSON was asked for, the complete sentences
of an answer cut off by max_tokens. Key points and tags may be missing, one string, or a
comma-separated string. Whitespace, markup and URLs that are the item's own are normalised
away. Not usable: no summary, a refusal or placeholder, the prompt or its delimiter echoed
back, a sentence or a long run of words said twice, text with too few content words of the
article or more of another article of the run, a note in another language than asked, an
answer cut off before its first sentence ended, a URL the item does not have (judging.py).
Key points and tags that are placeholders, echoes or repeats are dropped.
The week summary's answer is read in week_answers.py.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, ValidationError, ValidationInfo, field_validator

from digest.models import NoteBasis
from digest.notes.answer_text import prose, read_answer, summary_field, without_reasoning
from digest.notes.base import MAX_KEY_POINT_CHARS
from digest.notes.faithful import check, known_facts, unknown_facts
from digest.notes.judging import (
    ENGLISH,
    MIN_NOTE_WORDS,
    content_words,
    echoes,
    is_placeholder,
    is_repetitive,
    off_topic,
    repeats,
    stems,
    wordless,
    wrong_language,
)
from digest.text import URL, clean, sentences, shorten, without_links

MAX_SUMMARY_CHARS = 1200
MAX_SUMMARY_SENTENCES = 6
MAX_LIST_ITEMS = 5

NOTE_SCHEMA: dict[str, object] = {
    "type": "object",
    "properties": {
        "summary": {"type": "string"},
        "key_points": {"type": "array", "items": {"type": "string"}, "maxItems": MAX_LIST_ITEMS},
        "tags": {"type": "array", "items": {"type": "string"}, "maxItems": MAX_LIST_ITEMS},
    },
    "required": ["summary", "key_points", "tags"],
    "additionalProperties": False,
}

_PREAMBLE = re.compile(
    r"""^\s*(?:
        (?:sure|certainly|okay|of\ course)[,!.]\s+
      | here(?:'s|’s|\s+is|\s+are)\s+(?:a|an|the|your|my)\s+(?:\w+\s+){0,3}?(?:summary|note)\b[^:\n]{0,80}[:.]\s*
      | \**\s*(?:summary|tl;?dr)\s*\**\s*[:\-–—]\s*\**\s*
    )""",
    re.IGNORECASE | re.VERBOSE,
)
# Answers that are not a summary at all: placeholders, refusals, "as an AI" disclaimers.
_NOT_A_SUMMARY = re.compile(
    r"""^\W*(?:n/?a|none|null|nil|unknown|no\ (?:summary|content|text)\b.*
      | (?:summary\ )?not\ available\b.*
      | (?:i'?m|i\ am)\ (?:sorry|unable|not\ able)\b.* | i\ (?:cannot|can't|can\ not|could\ not|couldn't)\b.*
      | i\ (?:do\ not|don't)\ have\ (?:access|the\ ability)\b.* | as\ an?\ (?:ai|language\ model)\b.*
      | unfortunately,?\ i\b.* | sorry,?\ (?:but\ )?i\b.*
    )\W*$""",
    re.IGNORECASE | re.VERBOSE | re.DOTALL,
)
NO_WORDS = "the summary says nothing"  # refusals that the run's summary counts by kind
INVENTED = "the summary states facts its article does not"
TERMINAL = (".", "!", "?", "…", '."', ".'", ".”", '!"', '?"', ".)", "。")
_LIST_SPLIT = re.compile(r"\n+|;\s+")
_TAG_SPLIT = re.compile(r"[,;\n#|]+")


def strip_preamble(text: str) -> str:
    """Drop openers such as "Sure!", "Here is a summary:" and "Summary:" (repeatedly)."""
    while (match := _PREAMBLE.match(text)) and match.end() < len(text):
        text = text[match.end() :]
    return text.strip()


def one_line(value: str) -> str:
    return strip_preamble(" ".join(clean(value).split()))


@dataclass(frozen=True)
class AnswerContext:
    """What a note answer is checked against."""

    basis: NoteBasis = NoteBasis.FULL_TEXT
    known_tags: tuple[str, ...] = ()
    source: str = ""  # title and text sent: a summary is about it (judging.off_topic)
    title: str = ""  # a summary says more of the text than its title
    others: tuple[frozenset[str], ...] = ()  # content stems of the run's other articles
    instructions: str = ""  # what was asked: an answer must not echo it
    language: str = ""  # what the note must be written in ("": any)
    item_urls: tuple[str, ...] = ()  # a summary may name these (they are removed), no other
    echo_markers: tuple[str, ...] = ()  # the delimiter, lines of the instructions
    truncated: bool = False  # the answer was cut off by max_tokens


def texts(value: Any) -> list[str]:
    """Strings from whatever a model put in a field: a string, a list, numbers, objects."""
    if value is None or isinstance(value, bool):
        return []
    if isinstance(value, str):
        return [value]
    if isinstance(value, int | float):
        return [str(value)]
    if isinstance(value, dict):
        return [text for part in value.values() for text in texts(part)][:1]
    if isinstance(value, list | tuple):
        return [text for part in value for text in texts(part)]
    return []


class NoteAnswer(BaseModel):
    """Validated with an AnswerContext as context {"answer": ...} (see parse_note_answer)."""

    model_config = ConfigDict(extra="ignore")

    summary: str
    key_points: list[str] = Field(default_factory=list)
    tags: list[str] = Field(default_factory=list)

    @field_validator("summary", mode="before")
    @classmethod
    def _as_text(cls, value: Any) -> str:
        return one_line(prose(" ".join(texts(value))))

    @field_validator("summary")
    @classmethod
    def _usable(cls, value: str, info: ValidationInfo) -> str:
        context = _context(info)
        if not value and context.truncated:
            raise ValueError(
                "the answer was cut off by max_tokens before any summary: raise"
                " llm.max_output_tokens (reasoning models spend tokens on thinking first)"
            )
        if not value:
            raise ValueError("the answer had no summary")
        if _NOT_A_SUMMARY.match(value) or is_placeholder(value):
            raise ValueError("the summary must summarise the text, not be a placeholder or refusal")
        value = _without_item_urls(value, context.item_urls)
        if context.truncated:
            value = _complete_sentences(value)
        value = _fitted(value)
        if is_repetitive(value):
            raise ValueError("the summary says the same thing more than once")
        if echoes(value, context.instructions):
            raise ValueError("the answer echoed the prompt instead of summarising the text")
        if why := wordless(value, context.title):
            raise ValueError(f"{NO_WORDS}: {why}")
        if context.language and wrong_language(value, context.language):
            raise ValueError(f"the note must be written in {context.language}")
        translated = bool(context.language) and not ENGLISH.match(context.language)
        own, title = stems(context.source), stems(context.title)
        if why := off_topic(value, own, context.others, title=title, translated=translated):
            raise ValueError(f"the summary is not about the text: {why}")
        return _faithful(value, context.source, with_names=not translated)

    @field_validator("key_points", mode="before")
    @classmethod
    def _points(cls, value: Any, info: ValidationInfo) -> list[str]:
        parts = [part for text in texts(value) for part in _LIST_SPLIT.split(clean(text))]
        points = (without_links(one_line(prose(point))) for point in parts)
        kept: list[str] = []
        said = [str(info.data.get("summary") or "")]
        for point in points:
            if _usable_point(point, _context(info)) and not repeats(point, [*said, *kept]):
                kept.append(shorten(point, MAX_KEY_POINT_CHARS))
        return kept[:MAX_LIST_ITEMS]

    @field_validator("tags", mode="before")
    @classmethod
    def _normalised_tags(cls, value: Any, info: ValidationInfo) -> list[str]:
        known = {tag_key(tag): tag for tag in _context(info).known_tags}
        raw = (part for text in texts(value) for part in _TAG_SPLIT.split(clean(text)))
        tags = (" ".join(tag.lower().strip(" \"'`*.").split()) for tag in raw)
        tags = (known.get(tag_key(tag), tag) for tag in tags if not _unusable_tag(tag))
        return list(dict.fromkeys(tag for tag in tags if 0 < len(tag) <= 40))[:MAX_LIST_ITEMS]


def _context(info: ValidationInfo) -> AnswerContext:
    context = (info.context or {}).get("answer")
    return context if isinstance(context, AnswerContext) else AnswerContext()


def _without_item_urls(summary: str, item_urls: tuple[str, ...]) -> str:
    """The summary without the item's own URLs; a URL the item does not have is made up."""
    found = [url.rstrip(".,;:!?)]'\"") for url in URL.findall(summary)]
    found += re.findall(r"\]\(([^)\s]+)\)", summary)
    for url in found:
        bare = url.split("://", 1)[-1].removeprefix("www.").rstrip("/")
        if not any(bare and bare in known for known in item_urls):
            raise ValueError(f"the summary names a URL the item does not have ({shorten(url, 80)})")
    if not found:
        return summary
    summary = re.sub(r"!?\[([^\]]*)\]\([^)]*\)", r"\1", summary)  # [text](url): the text
    for url in sorted(found, key=len, reverse=True):
        summary = summary.replace(url, "")
    return re.sub(r"\s+([.,;:!?])", r"\1", " ".join(summary.split()))


def _complete_sentences(summary: str) -> str:
    """What was cut off by max_tokens taken away: the sentences that ended."""
    whole = sentences(summary)
    if whole and not whole[-1].endswith(TERMINAL):
        whole.pop()
    if not whole:
        raise ValueError("the answer was cut off before its first sentence ended")
    return " ".join(whole)


def _fitted(summary: str) -> str:
    """At most MAX_SUMMARY_SENTENCES sentences and MAX_SUMMARY_CHARS characters, whole
    sentences kept where they fit."""
    kept: list[str] = []
    for sentence in sentences(summary)[:MAX_SUMMARY_SENTENCES]:
        if len(" ".join([*kept, sentence])) > MAX_SUMMARY_CHARS:
            break
        kept.append(sentence)
    return " ".join(kept) if kept else shorten(summary, MAX_SUMMARY_CHARS)


def _faithful(summary: str, source: str, *, with_names: bool) -> str:
    """The summary without its sentences that say what the article does not (faithful.py);
    refused when too little is left."""
    if not source:
        return summary
    checked = check(sentences(summary), known_facts(source), with_names=with_names)
    if not checked.dropped:
        return summary
    if len(content_words(checked.text)) < MIN_NOTE_WORDS:
        facts = shorten(", ".join(checked.missing()), 120)
        raise ValueError(f"{INVENTED}: the article does not say {facts}")
    return checked.text


def _usable_point(point: str, context: AnswerContext) -> bool:
    """A key point that says something of the text: words, some of them the article's, no
    fact the article lacks, no placeholder (a bracketed tag), echo or repetition."""
    if not point or is_placeholder(point) or is_repetitive(point):
        return False
    if echoes(point, context.instructions) or not (said := content_words(point)):
        return False
    if not context.source:
        return True
    english = not context.language or bool(ENGLISH.match(context.language))
    if unknown_facts(point, known_facts(context.source), with_names=english):
        return False
    own = stems(context.source)
    # a short point ("fast") may say in its own words what the text says in others
    return (not english or bool(stems(" ".join(said)) & own)) and (
        len(stems(point)) < 3 or not off_topic(point, own, context.others)
    )


def _unusable_tag(tag: str) -> bool:
    return bool(URL.search(tag)) or is_placeholder(tag)


def tag_key(tag: str) -> str:
    """'Language-Models' and 'language model' are the same tag."""
    words_ = re.sub(r"[\s_\-/]+", " ", tag.lower()).split()
    return " ".join(word[:-1] if len(word) > 3 and word.endswith("s") else word for word in words_)


_KEY_POINT_KEYS = ("key_points", "keypoints", "key points", "points", "highlights", "bullets")
_TAG_KEYS = ("tags", "topics", "keywords", "categories", "labels")


def first(data: dict[str, Any], keys: tuple[str, ...]) -> Any:
    return next((data[key] for key in keys if data.get(key) not in (None, "", [])), None)


def parse_note_answer(content: str | None, context: AnswerContext | None = None) -> NoteAnswer:
    """The note in a model's answer; ValueError (pydantic's ValidationError among them) if it
    has none that is usable."""
    context = context or AnswerContext()
    answer = without_reasoning(content or "")  # reasoning may quote the prompt, an answer not
    if any(marker and marker in answer for marker in context.echo_markers):
        raise ValueError("the answer echoed the prompt instead of summarising the text")
    read = read_answer(content)
    if isinstance(read, str):
        fields: dict[str, Any] = {"summary": read}
    else:
        fields = {
            "summary": summary_field(read),
            "key_points": first(read, _KEY_POINT_KEYS),
            "tags": first(read, _TAG_KEYS),
        }
    return NoteAnswer.model_validate(fields, context={"answer": context})


def describe_invalid(exc: ValueError) -> str:
    """A short account of what was wrong, without echoing the answer back."""
    if isinstance(exc, ValidationError):
        problems = []
        for error in exc.errors(include_url=False, include_input=False, include_context=False):
            where = ".".join(str(part) for part in error["loc"]) or "answer"
            problems.append(f"{where}: {error['msg'].removeprefix('Value error, ')}")
        return "; ".join(problems)
    return str(exc)
