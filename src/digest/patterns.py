"""Your [[rules]] `regex`, on a linear-time engine (RE2, pure): no pattern can stall a run,
whatever the text. RE2 takes Python's syntax but for lookarounds and backreferences, which
it refuses (a config error at load, naming the rule and line). `\\w` and `\\W` keep Python's
meaning (any letter or digit, in any script); `\\b` is a word boundary between ASCII word
characters. A pattern sees at most PATTERN_TEXT_CHARS of an item's text.
"""

from __future__ import annotations

from functools import cache

import re2

PATTERN_TEXT_CHARS = 200_000
PATTERN_CHARS = 2_000  # the longest pattern a rule may give
_WORD = r"\p{L}\p{N}_"


@cache
def compile_pattern(pattern: str) -> re2._Regexp:
    """`pattern` compiled by RE2; ValueError saying why it cannot be."""
    if len(pattern) > PATTERN_CHARS:
        raise ValueError(f"regex longer than {PATTERN_CHARS:,} characters")
    options = re2.Options()
    options.log_errors = False  # the error is ours to tell, once
    try:
        return re2.compile(_unicode_words(pattern), options)
    except re2.error as exc:
        why = exc.args[0].decode("utf-8", "replace") if exc.args else str(exc)
        raise ValueError(f"regex not accepted (RE2 syntax: no lookarounds or \\1): {why}") from exc


def pattern_found(pattern: str, text: str) -> bool:
    return compile_pattern(pattern).search(text[:PATTERN_TEXT_CHARS]) is not None


def _unicode_words(pattern: str) -> str:
    """`\\w` and `\\W` as Python means them: RE2's are ASCII only."""
    out: list[str] = []
    in_class = False
    position = 0
    while position < len(pattern):
        char = pattern[position]
        if char == "\\" and position + 1 < len(pattern):
            escape = pattern[position : position + 2]
            if escape == "\\w":
                escape = _WORD if in_class else f"[{_WORD}]"
            elif escape == "\\W" and not in_class:
                escape = f"[^{_WORD}]"
            out.append(escape)
            position += 2
            continue
        if char == "[" and not in_class:
            in_class = True
            if pattern[position + 1 : position + 2] == "^":
                out.append("[^")
                position += 2
                if pattern[position : position + 1] == "]":
                    out.append("]")
                    position += 1
                continue
            if pattern[position + 1 : position + 2] == "]":
                out.append("[]")
                position += 2
                continue
        elif char == "]" and in_class:
            in_class = False
        out.append(char)
        position += 1
    return "".join(out)
