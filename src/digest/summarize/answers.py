"""What a model's answers must look like, and how a bad one is described back to it (pure).

A note: a summary of 2 to 4 sentences (1 to 4 when only saved context or a post was read), up
to 5 key points and 5 tags; empty, placeholder ("N/A"), refusing, oversized or URL-bearing
summaries are refused so that the one repair attempt can fix them. The week summary: statements
that each cite item ids, and the must-reads; the composer checks the ids against the store.
"""

from __future__ import annotations

import json
import re
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, ValidationError, ValidationInfo, field_validator

from digest.models import NoteBasis
from digest.summarize.text import URL, clean, sentences, shorten, without_links

MAX_SUMMARY_CHARS = 1200
MAX_SUMMARY_SENTENCES = 4
MAX_LIST_ITEMS = 5
MAX_KEY_POINT_CHARS = 200
MAX_STATEMENTS = 6
MAX_STATEMENT_CHARS = 600
MAX_MUST_READS = 3

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

WEEK_SCHEMA: dict[str, object] = {
    "type": "object",
    "properties": {
        "statements": {
            "type": "array",
            "items": {
                "type": "object",
                "properties": {
                    "text": {"type": "string"},
                    "items": {"type": "array", "items": {"type": "integer"}},
                },
                "required": ["text", "items"],
                "additionalProperties": False,
            },
            "maxItems": MAX_STATEMENTS,
        },
        "must_read": {"type": "array", "items": {"type": "integer"}, "maxItems": MAX_MUST_READS},
    },
    "required": ["statements", "must_read"],
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
# Answers that are not a summary at all: placeholders and refusals.
_NOT_A_SUMMARY = re.compile(
    r"""^\W*(?:n/?a|none|null|nil|unknown|no\ (?:summary|content|text)\b.*
      | (?:summary\ )?not\ available\b.*
      | (?:i'?m|i\ am)\ (?:sorry|unable)\b.* | i\ (?:cannot|can't|can\ not)\b.* | as\ an\ ai\b.*
    )\W*$""",
    re.IGNORECASE | re.VERBOSE | re.DOTALL,
)
_FENCE = re.compile(r"^\s*```(?:json)?\s*\n?(.*?)\n?```\s*$", re.DOTALL | re.IGNORECASE)


def strip_preamble(text: str) -> str:
    """Drop openers such as "Sure!", "Here is a summary:" and "Summary:" (repeatedly)."""
    while (match := _PREAMBLE.match(text)) and match.end() < len(text):
        text = text[match.end() :]
    return text.strip()


def _one_line(value: str) -> str:
    return strip_preamble(" ".join(clean(value).split()))


class NoteAnswer(BaseModel):
    """Validated with context {"basis": NoteBasis, "known_tags": [...]} (see parse_note_answer)."""

    model_config = ConfigDict(extra="ignore")

    summary: str = Field(min_length=1, max_length=MAX_SUMMARY_CHARS)
    key_points: list[str] = Field(default_factory=list)
    tags: list[str] = Field(default_factory=list)

    @field_validator("summary", mode="before")
    @classmethod
    def _without_preamble(cls, value: Any) -> Any:
        return _one_line(value) if isinstance(value, str) else value

    @field_validator("summary")
    @classmethod
    def _a_real_summary(cls, value: str, info: ValidationInfo) -> str:
        if _NOT_A_SUMMARY.match(value):
            raise ValueError("the summary must summarise the text, not be a placeholder or refusal")
        if URL.search(value) or "](" in value:
            raise ValueError("the summary must not contain URLs")
        count = len(sentences(value))
        fewest = 2 if _basis(info) in (NoteBasis.FULL_TEXT, NoteBasis.EXCERPT) else 1
        if not fewest <= count <= MAX_SUMMARY_SENTENCES:
            raise ValueError(
                f"the summary must have {fewest} to {MAX_SUMMARY_SENTENCES} sentences, not {count}"
            )
        return value

    @field_validator("key_points")
    @classmethod
    def _short_list(cls, value: list[str]) -> list[str]:
        points = (without_links(_one_line(point)).lstrip("-•* ") for point in value)
        return [shorten(point, MAX_KEY_POINT_CHARS) for point in points if point][:MAX_LIST_ITEMS]

    @field_validator("tags")
    @classmethod
    def _normalised_tags(cls, value: list[str], info: ValidationInfo) -> list[str]:
        known = {tag_key(tag): tag for tag in (info.context or {}).get("known_tags", ())}
        tags = (" ".join(clean(tag).lower().strip("#").split()) for tag in value)
        tags = (known.get(tag_key(tag), tag) for tag in tags if not URL.search(tag))
        return list(dict.fromkeys(tag for tag in tags if 0 < len(tag) <= 40))[:MAX_LIST_ITEMS]


def tag_key(tag: str) -> str:
    """'Language-Models' and 'language model' are the same tag."""
    words = re.sub(r"[\s_\-/]+", " ", tag.lower()).split()
    return " ".join(word[:-1] if len(word) > 3 and word.endswith("s") else word for word in words)


def _basis(info: ValidationInfo) -> NoteBasis:
    return NoteBasis((info.context or {}).get("basis", NoteBasis.FULL_TEXT))


class StatementAnswer(BaseModel):
    model_config = ConfigDict(extra="ignore")

    text: str = Field(min_length=1, max_length=MAX_STATEMENT_CHARS)
    items: list[int] = Field(default_factory=list)

    @field_validator("text", mode="before")
    @classmethod
    def _without_preamble(cls, value: Any) -> Any:
        return _one_line(value) if isinstance(value, str) else value


class WeekAnswer(BaseModel):
    model_config = ConfigDict(extra="ignore")

    statements: list[StatementAnswer] = Field(min_length=1)
    must_read: list[int] = Field(default_factory=list)

    @field_validator("statements")
    @classmethod
    def _few(cls, value: list[StatementAnswer]) -> list[StatementAnswer]:
        return value[:MAX_STATEMENTS]

    @field_validator("must_read")
    @classmethod
    def _fewer(cls, value: list[int]) -> list[int]:
        return list(dict.fromkeys(value))[:MAX_MUST_READS]


def parse_note_answer(
    content: str | None,
    basis: NoteBasis = NoteBasis.FULL_TEXT,
    known_tags: tuple[str, ...] = (),
) -> NoteAnswer:
    """The note in a model's answer; ValueError (pydantic's ValidationError among them) if none."""
    context = {"basis": basis, "known_tags": known_tags}
    return NoteAnswer.model_validate(_json_object(content), context=context)


def parse_week_answer(content: str | None) -> WeekAnswer:
    return WeekAnswer.model_validate(_json_object(content))


def _json_object(content: str | None) -> dict[str, Any]:
    if not content or not content.strip():
        raise ValueError("the answer was empty")
    if fenced := _FENCE.match(content):
        content = fenced.group(1)
    try:
        data = json.loads(content)
    except json.JSONDecodeError as exc:
        raise ValueError(f"the answer was not JSON ({exc.msg} at character {exc.pos})") from exc
    if not isinstance(data, dict):
        raise ValueError("the answer was not a JSON object")
    return data


def describe_invalid(exc: ValueError) -> str:
    """A short account of what was wrong, without echoing the answer back."""
    if isinstance(exc, ValidationError):
        problems = []
        for error in exc.errors(include_url=False, include_input=False, include_context=False):
            where = ".".join(str(part) for part in error["loc"]) or "answer"
            problems.append(f"{where}: {error['msg'].removeprefix('Value error, ')}")
        return "; ".join(problems)
    return str(exc)
