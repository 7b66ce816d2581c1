"""A model's answer read as it was written (pure), before anything is judged.

What real servers send back when asked for a JSON object, and what becomes of it:
- the object alone, or inside a markdown fence (```json … ```), or after a preamble
  ("Sure! Here is the note:"), or followed by a comment or a second attempt;
- JSON as people type it: single quotes, trailing commas, comments, unquoted keys,
  and an object cut off mid-string by max_tokens (closed by json-repair);
- a reasoning block first (`<think>…</think>`, `<thinking>…</thinking>`; sometimes only
  the closing tag survives the chat template); a block never closed is all reasoning;
- plain prose with no JSON at all: that is the answer, as text; prose in labelled sections
  ("**Summary:** …", "Key points:" and a list, "Tags: a, b") is read by its labels;
- nothing: an empty string, or only reasoning.

`read_answer` never raises: it gives the first JSON object found, else the prose.
"""

from __future__ import annotations

import re
from typing import Any

import json_repair

_REASONING = re.compile(r"<(think|thinking|reasoning)>.*?(?:</\1>|\Z)", re.DOTALL | re.IGNORECASE)
_CLOSING_TAG = re.compile(r"</(?:think|thinking|reasoning)>", re.IGNORECASE)
_FENCE_LINE = re.compile(r"^\s*(?:```|~~~)[\w-]*\s*$", re.MULTILINE)
# Markdown that means nothing in a plain-text note: headings, emphasis, quotes, list marks.
_MARKUP = re.compile(r"(?m)^\s{0,3}(?:#{1,6}\s+|>\s?|[-*•+]\s+|\d{1,2}[.)]\s+)|\*\*|__|`")
_HTML_TAG = re.compile(r"</?[a-zA-Z][\w-]*(?:\s[^<>]{0,200})?/?>")
_SUMMARY_KEYS = ("summary", "tldr", "tl;dr", "abstract", "note", "overview", "description")
# A line opening a labelled section of a prose answer: "## Key points", "**Tags:** a, b".
_LABEL = re.compile(
    r"^[\s#*_>-]*(summary|tl;?dr|key\s+points|key\s+takeaways|highlights|tags|topics|keywords)"
    r"[\s*_]*(?::|\n|$)[\s*_]*(.*)$",
    re.IGNORECASE,
)
_LABELS = {"tl;dr": "summary", "tldr": "summary", "key takeaways": "key_points",
           "highlights": "key_points", "topics": "tags", "keywords": "tags"}  # fmt: skip
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
    return _labelled(text) or prose(text)


def _labelled(text: str) -> dict[str, Any] | None:
    """A prose answer in labelled sections, as fields; None unless it has key points or tags
    (a lone "Summary:" is a preamble)."""
    sections: dict[str, list[str]] = {"summary": []}
    current = "summary"
    for line in _FENCE_LINE.sub("", text).splitlines():
        if match := _LABEL.match(line):
            label = " ".join(match[1].lower().split())
            current = _LABELS.get(label, label.replace(" ", "_"))
            sections[current] = []  # what came before a "Summary:" label was a preamble
            line = match[2]
        sections[current].append(line)
    if not {"key_points", "tags"}.intersection(sections):
        return None
    fields: dict[str, Any] = {"summary": prose("\n".join(sections["summary"]))}
    if "key_points" in sections:
        fields["key_points"] = [prose(line) for line in sections["key_points"] if prose(line)]
    if "tags" in sections:
        fields["tags"] = prose(", ".join(line for line in sections["tags"] if line.strip()))
    return fields


def prose(text: str) -> str:
    """Text with fences, markdown marks and HTML tags removed and whitespace collapsed."""
    text = _MARKUP.sub("", _HTML_TAG.sub(" ", _FENCE_LINE.sub("", text)))
    return re.sub(r"\s+([.,;:!?])(?=\s|$)", r"\1", " ".join(text.split()))


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
