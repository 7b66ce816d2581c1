"""What a model's note must look like, and how a bad answer is described back to it (pure)."""

from __future__ import annotations

import json
import re
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator

from digest.summarize.text import clean

MAX_SUMMARY_CHARS = 1200
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
        (?:sure|certainly|okay)[,!.]\s+
      | here(?:'s|’s|\s+is)\s+(?:a|an|the|your|my)\s+(?:\w+\s+){0,3}?summary\b[^:\n]{0,80}[:.]\s*
      | \**\s*summary\s*\**\s*[:\-–—]\s*\**\s*
    )""",
    re.IGNORECASE | re.VERBOSE,
)
_URL = re.compile(r"\b(?:https?://|ftp://|www\.)\S+", re.IGNORECASE)
_FENCE = re.compile(r"^\s*```(?:json)?\s*\n?(.*?)\n?```\s*$", re.DOTALL | re.IGNORECASE)


def strip_preamble(text: str) -> str:
    """Drop openers such as "Sure!", "Here is a summary:" and "Summary:" (repeatedly)."""
    while (match := _PREAMBLE.match(text)) and match.end() < len(text):
        text = text[match.end() :]
    return text.strip()


class NoteAnswer(BaseModel):
    model_config = ConfigDict(extra="ignore")

    summary: str = Field(min_length=1, max_length=MAX_SUMMARY_CHARS)
    key_points: list[str] = Field(default_factory=list)
    tags: list[str] = Field(default_factory=list)

    @field_validator("summary", mode="before")
    @classmethod
    def _without_preamble(cls, value: Any) -> Any:
        return strip_preamble(" ".join(clean(value).split())) if isinstance(value, str) else value

    @field_validator("summary")
    @classmethod
    def _without_urls(cls, value: str) -> str:
        if _URL.search(value):
            raise ValueError("the summary must not contain URLs")
        return value

    @field_validator("key_points")
    @classmethod
    def _short_list(cls, value: list[str]) -> list[str]:
        points = (" ".join(clean(point).split()) for point in value)
        return [point for point in points if point][:MAX_LIST_ITEMS]

    @field_validator("tags")
    @classmethod
    def _normalised_tags(cls, value: list[str]) -> list[str]:
        tags = (" ".join(clean(tag).lower().strip("#").split()) for tag in value)
        return list(dict.fromkeys(tag for tag in tags if 0 < len(tag) <= 40))[:MAX_LIST_ITEMS]


def parse_note_answer(content: str | None) -> NoteAnswer:
    """The note in a model's answer; ValueError (pydantic's ValidationError among them) if none."""
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
    return NoteAnswer.model_validate(data)


def describe_invalid(exc: ValueError) -> str:
    """A short account of what was wrong, without echoing the answer back."""
    if isinstance(exc, ValidationError):
        problems = []
        for error in exc.errors(include_url=False, include_input=False):
            where = ".".join(str(part) for part in error["loc"]) or "answer"
            problems.append(f"{where}: {error['msg'].removeprefix('Value error, ')}")
        return "; ".join(problems)
    return str(exc)
