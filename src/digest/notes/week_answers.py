"""The week summary's answer, read as tolerantly as real models write it, and checked like a
note (pure): a statement is kept when it cites items of the week, shares content words with
the notes it cites and names no number or name they do not hold (faithful.py); those that
are placeholders or said twice are dropped; "must read" only among the notes the model wrote.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator

from digest.notes.answer_text import prose, read_answer
from digest.notes.answers import TERMINAL, first, one_line, texts
from digest.notes.faithful import known_facts, unknown_facts
from digest.notes.judging import content_words, is_placeholder, is_repetitive, stems
from digest.text import shorten

MAX_STATEMENTS = 6
MAX_STATEMENT_CHARS = 600
MAX_MUST_READS = 3

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


class StatementAnswer(BaseModel):
    model_config = ConfigDict(extra="ignore")

    text: str = Field(min_length=1, max_length=MAX_STATEMENT_CHARS)
    items: list[int] = Field(default_factory=list)

    @field_validator("text", mode="before")
    @classmethod
    def _without_preamble(cls, value: Any) -> str:
        return shorten(one_line(prose(" ".join(texts(value)))), MAX_STATEMENT_CHARS)

    @field_validator("text")
    @classmethod
    def _says_something(cls, value: str) -> str:
        if is_placeholder(value) or is_repetitive(value):
            raise ValueError("a placeholder or a repetition, not a statement")
        return value

    @field_validator("items", mode="before")
    @classmethod
    def _numbers(cls, value: Any) -> list[int]:
        return [int(n) for text in texts(value) for n in re.findall(r"\d{1,9}", text)]


class WeekAnswer(BaseModel):
    statements: list[StatementAnswer]
    must_read: list[int] = Field(default_factory=list)


_INLINE_CITATION = re.compile(r"\[(\d+(?:\s*,\s*\d+)*)\]")  # "… as two posts show [3, 7]"
_CITE_KEYS = ("items", "cites", "citations", "ids", "sources", "item_ids")


def supported(statement: str, cited: list[str]) -> bool:
    """Whether a statement says what the notes it cites say: content words in common with
    them, and no number or name they lack (its inline citations aside)."""
    if not cited:
        return True
    text = _INLINE_CITATION.sub(" ", statement)
    notes = "\n".join(cited)
    if not stems(" ".join(content_words(text))) & stems(notes):
        return False
    return not unknown_facts(text, known_facts(notes))


def parse_week_answer(
    content: str | None,
    item_ids: frozenset[int] | None = None,
    must_read_ids: frozenset[int] | None = None,
    *,
    truncated: bool = False,
    notes: Mapping[int, str] | None = None,
) -> WeekAnswer:
    """The statements of a week summary that cite items in `item_ids` (all, if None), citing
    only those, each said once, whole (a `truncated` answer's last may be cut off), saying
    what the `notes` they cite say (by item id: its title and note); "must read" only among
    `must_read_ids` (all cited, if None); ValueError if no statement is left."""
    read = read_answer(content)
    data = read if isinstance(read, dict) else {}
    statements: list[StatementAnswer] = []
    said: set[str] = set()
    for raw in _listed(data.get("statements") or data.get("themes")):
        fields = raw if isinstance(raw, dict) else {"text": raw}
        cites = first({str(k).lower(): v for k, v in fields.items()}, _CITE_KEYS)
        cites = cites or _INLINE_CITATION.findall(" ".join(texts(fields.get("text"))))
        try:
            statement = StatementAnswer.model_validate({"text": fields.get("text"), "items": cites})
        except ValidationError:
            continue
        if truncated and not statement.text.endswith(TERMINAL):
            continue
        cited = [i for i in dict.fromkeys(statement.items) if item_ids is None or i in item_ids]
        if notes is not None and not supported(statement.text, [notes.get(i, "") for i in cited]):
            continue
        if cited and (key := " ".join(statement.text.lower().split())) not in said:
            said.add(key)
            statements.append(statement.model_copy(update={"items": cited}))
    if not statements:
        raise ValueError(
            "no statement of the week summary cited an item of the week and said what its note says"
        )
    readable = must_read_ids if must_read_ids is not None else item_ids
    must_read = StatementAnswer._numbers(data.get("must_read"))
    must_read = [i for i in dict.fromkeys(must_read) if readable is None or i in readable]
    return WeekAnswer(statements=statements[:MAX_STATEMENTS], must_read=must_read[:MAX_MUST_READS])


def _listed(value: Any) -> list[Any]:
    return value if isinstance(value, list) else [value] if value else []
