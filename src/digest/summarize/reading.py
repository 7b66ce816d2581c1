"""A model's answer read as it was written (pure), before anything is judged.

What real servers send back when asked for a JSON object, and what becomes of it:
- the object alone, or inside a markdown fence (```json … ```), or after a preamble
  ("Sure! Here is the note:"), or followed by a comment or a second attempt;
- JSON as people type it: single quotes, trailing commas, comments, unquoted keys,
  and an object cut off mid-string by max_tokens (closed by json-repair);
- a reasoning block first (`<think>…</think>`, `<thinking>…</thinking>`; sometimes only
  the closing tag survives the chat template); a block never closed is all reasoning;
- plain prose with no JSON at all: that is the answer, as text;
- nothing: an empty string, or only reasoning.

`read_answer` never raises: it gives the first JSON object found, else the prose.
"""

from __future__ import annotations

import re
from typing import Any

import json_repair

_REASONING = re.compile(
    r"<(think|thinking|reasoning)>.*?(?:</\1>|\Z)", re.DOTALL | re.IGNORECASE
)
_CLOSING_TAG = re.compile(r"</(?:think|thinking|reasoning)>", re.IGNORECASE)
_FENCE_LINE = re.compile(r"^\s*(?:```|~~~)[\w-]*\s*$", re.MULTILINE)
# Markdown that means nothing in a plain-text note: headings, emphasis, quotes, list marks.
_MARKUP = re.compile(r"(?m)^\s{0,3}(?:#{1,6}\s+|>\s?|[-*•+]\s+|\d{1,2}[.)]\s+)|\*\*|__|`")
_SUMMARY_KEYS = ("summary", "tldr", "tl;dr", "abstract", "note", "overview", "description")
# An object with none of these keys is not an answer but braces in prose: "{like this}".
_ANSWER_KEYS = frozenset(
    (*_SUMMARY_KEYS, "text", "content", "key_points", "tags", "statements", "must_read")
)


def without_reasoning(content: str) -> str:
    """The answer with reasoning blocks taken out; text before a lone closing tag is reasoning."""
    text = _REASONING.sub("", content)
    *_reasoning, answer = _CLOSING_TAG.split(text)
    return answer


def read_answer(content: str | None) -> dict[str, Any] | str:
    """The JSON object in the answer, with its keys in lower case; else the answer as prose
    (stripped of fences and markup; empty when there was nothing)."""
    text = without_reasoning(content or "")
    found = _json_object(text[text.find("{") :]) if "{" in text else None
    if found is not None and _ANSWER_KEYS.intersection(found):
        return found
    return prose(text)


def prose(text: str) -> str:
    """Text with fences and markdown marks removed and whitespace collapsed."""
    text = _MARKUP.sub("", _FENCE_LINE.sub("", text))
    return " ".join(text.split())


def _json_object(text: str) -> dict[str, Any] | None:
    try:
        data = json_repair.loads(text)
    except Exception:  # a third-party parser on arbitrary text: any failure means "no JSON"
        return None
    if isinstance(data, list):  # several objects one after the other
        objects = [part for part in data if isinstance(part, dict)]
        data = next((o for o in objects if _summary_key(o)), objects[0] if objects else None)
    if not isinstance(data, dict) or not data:
        return None
    data = {str(key).strip().lower(): value for key, value in data.items()}
    if _summary_key(data) is None:  # {"note": {...}}: the one nested object is the answer
        nested = [value for value in data.values() if isinstance(value, dict)]
        if len(nested) == 1 and _summary_key(nested[0]) is not None:
            return {str(key).strip().lower(): value for key, value in nested[0].items()}
    return data


def _summary_key(data: dict[Any, Any]) -> Any:
    """The key a model put its summary under ('summary', 'tldr', 'abstract', …), if any."""
    keys = {str(key).strip().lower(): key for key in data}
    for name in _SUMMARY_KEYS:
        value = data[keys[name]] if name in keys else None
        if value and not isinstance(value, dict):
            return keys[name]
    return None


def summary_field(data: dict[str, Any]) -> Any:
    """The summary in a read answer: under a summary-like key, else under text or content."""
    key = _summary_key(data)
    return data[key] if key is not None else data.get("text") or data.get("content")
