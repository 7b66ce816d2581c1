"""What a user reads about a config that does not validate: one line per problem, naming
the file, the line and the key, in our words (a range, a close key that was meant)."""

from __future__ import annotations

import difflib
import re
from collections.abc import Iterable
from pathlib import Path

from pydantic import BaseModel, ValidationError
from pydantic_core import ErrorDetails

from digest.config.models import Config
from digest.config.sections import LLMConfig


def describe_validation_errors(exc: ValidationError, text: str, path: Path) -> str:
    """Every problem pydantic found, one line each, in our words."""
    lines = []
    for error in exc.errors():
        location = [str(part) for part in error["loc"]]
        line = find_line(text, location)
        where = f"{path}:{line}" if line else str(path)
        lines.append(f"config error: {where}: {_dotted_key(location)}: {_in_our_words(error)}")
    return "\n".join(lines)


_BOUNDS = {
    "greater_than_equal": ("at least", "ge"),
    "less_than_equal": ("at most", "le"),
    "greater_than": ("more than", "gt"),
    "less_than": ("less than", "lt"),
}
_TABLE = "must be a table ([section] or { key = value })"
_EXPECTED = {
    "int_parsing": "must be a whole number",
    "int_type": "must be a whole number",
    "int_from_float": "must be a whole number",
    "float_parsing": "must be a number",
    "float_type": "must be a number",
    "bool_parsing": "must be true or false",
    "bool_type": "must be true or false",
    "string_type": 'must be text in quotes ("...")',
    "list_type": "must be a list ([...])",
    "model_type": _TABLE,
    "model_attributes_type": _TABLE,
    "dict_type": _TABLE,
    "finite_number": "must be a finite number",
}


def _in_our_words(error: ErrorDetails) -> str:
    kind, given, context = error["type"], error.get("input"), error.get("ctx", {})
    if kind == "extra_forbidden":
        return "unknown key" + _did_you_mean([str(part) for part in error["loc"]])
    if kind == "missing":
        return "required here"
    if kind == "value_error":
        return str(context.get("error", error["msg"]))
    if kind == "literal_error":
        return f"must be one of {context.get('expected', '')}, not {given!r}"
    if kind in _BOUNDS:
        words, key = _BOUNDS[kind]
        allowed = _range_of([str(part) for part in error["loc"]])
        return f"must be {allowed or f'{words} {context.get(key)}'}, not {given!r}"
    if kind in _EXPECTED:
        return f"{_EXPECTED[kind]}, not {given!r}"
    return str(error["msg"])


def _did_you_mean(location: list[str]) -> str:
    # In TOML a key written after a [table] header belongs to that table.
    if len(location) > 1 and location[-1] in ("interests", "rules"):
        return f"; {location[-1]} goes at the top of the file, before any [section]"
    known = _keys_at(location[:-1])
    close = difflib.get_close_matches(location[-1], known, n=1, cutoff=0.6)
    return f"; did you mean {close[0]!r}?" if close else ""


def _range_of(location: list[str]) -> str | None:
    """The documented range of the number at `location`: "at least 0 and at most 86400"."""
    model = _model_at(location[:-1])
    field = model.model_fields.get(location[-1]) if model is not None else None
    if field is None:
        return None
    return range_words(field.metadata)


def range_words(constraints: Iterable[object]) -> str | None:
    """A field's bounds (annotated_types Ge, Gt, Le, Lt) in words, lower bound first."""
    words = {
        "ge": "at least",
        "gt": "more than",
        "le": "at most",
        "lt": "less than",
    }
    parts = [
        f"{words[name]} {getattr(bound, name):_}"
        for name in words
        for bound in constraints
        if getattr(bound, name, None) is not None
    ]
    return " and ".join(parts) or None


def _model_at(location: list[str]) -> type[BaseModel] | None:
    """The model of the table at `location` (list indexes and dict keys skipped)."""
    model: type[BaseModel] = Config
    for part in location:
        field = model.model_fields.get(part)
        if field is None:
            continue  # an index into [[sources]] or a key of [llm.prices]
        nested = _model_in(field.annotation)
        if nested is None:
            return None
        model = nested
    return model


def _keys_at(location: list[str]) -> list[str]:
    """The keys the table at `location` accepts (list indexes and dict keys skipped)."""
    model = _model_at(location)
    if model is None:
        return []
    hidden = {"note_sentences"} if model is LLMConfig else set()
    return [field.alias or name for name, field in model.model_fields.items() if name not in hidden]


def _model_in(annotation: object) -> type[BaseModel] | None:
    if isinstance(annotation, type) and issubclass(annotation, BaseModel):
        return annotation
    for argument in getattr(annotation, "__args__", ()):
        if (model := _model_in(argument)) is not None:
            return model
    return None


_TABLE_ARRAYS = ("sources", "rules")  # [[sources]], [[rules]]: located by their n-th header


def _dotted_key(location: list[str]) -> str:
    if location and location[0] in _TABLE_ARRAYS and len(location) > 1 and location[1].isdigit():
        rest = ".".join(location[2:])
        return f"{location[0]}[{int(location[1]) + 1}]" + (f".{rest}" if rest else "")
    return ".".join(location)


def find_line(text: str, location: list[str]) -> int | None:
    """Best effort: the line of the key in its [section] (or n-th [[sources]])."""
    if not location:
        return None
    lines = text.splitlines()
    section_start = 0
    key = location[-1]
    if location[0] in _TABLE_ARRAYS and len(location) > 1 and location[1].isdigit():
        header = re.compile(rf"\s*\[\[{location[0]}\]\]")
        headers = [i for i, line in enumerate(lines) if header.match(line)]
        index = int(location[1])
        if index >= len(headers):
            return None
        section_start = headers[index]
        if len(location) == 2:
            return section_start + 1
    elif len(location) > 1:
        for i, line in enumerate(lines):
            if re.match(rf"\s*\[{re.escape(location[0])}\]\s*(#.*)?$", line):
                section_start = i
                break
        else:
            return None
    for i in range(section_start, len(lines)):
        if i > section_start and re.match(r"\s*\[", lines[i]) and len(location) > 1:
            break
        if re.match(rf"\s*({re.escape(key)}\s*=|\[\[?{re.escape(key)}\]\]?\s*(#.*)?$)", lines[i]):
            return i + 1
    return None
