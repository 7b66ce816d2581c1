"""digest.patterns: a rule's regex runs in linear time on bounded text, keeps Python's
Unicode \\w, and a pattern RE2 refuses is a ValueError saying why."""

from __future__ import annotations

import time

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from digest.patterns import PATTERN_TEXT_CHARS, compile_pattern, pattern_found


@pytest.mark.parametrize(
    ("pattern", "text", "expected"),
    [
        (r"(?i)(\w+\s?)+sponsored", " ".join(["word"] * 17) + ".", False),
        (r"(a+)+$", "a" * 100_000 + "!", False),
        (r"(x+x+)+y", "x" * 100_000, False),
        (r"(.*a){20}", "a" * 100_000, True),
    ],
)
def test_a_catastrophic_pattern_ends_at_once(pattern: str, text: str, expected: bool) -> None:
    started = time.process_time()  # the work it takes: a busy machine's wall time only flakes

    found = pattern_found(pattern, text)

    assert time.process_time() - started < 1 and found == expected


def test_words_are_words_in_any_script() -> None:
    assert pattern_found(r"\bcaf\w+ crème", "un café crème")
    assert pattern_found(r"^[\w ]+$", "Ünïcödé wörds 12")
    assert not pattern_found(r"\W", "Ünïcödé_wörds")
    assert pattern_found(r"[^\w]", "a-b")


def test_only_the_bounded_head_of_a_text_is_searched() -> None:
    assert not pattern_found("needle", "x" * PATTERN_TEXT_CHARS + "needle")


@pytest.mark.parametrize("pattern", ["a(b", r"(?<=a)b", r"(a)\1", r"(?!x)y", "x" * 3000])
def test_a_pattern_re2_refuses_says_why(pattern: str) -> None:
    with pytest.raises(ValueError, match="regex"):
        compile_pattern(pattern)


PIECES = st.sampled_from(
    ["a", "b", ".", "*", "+", "?", "(", ")", "|", "[", "]", "^", "$", "\\w", "\\W", "\\b",
     "\\s", "{2}", "{1,30}", "(?i)", "\\", "é", "-", "(?:"]
)  # fmt: skip


@pytest.mark.slow
@settings(max_examples=200)
@given(st.lists(PIECES, min_size=1, max_size=16).map("".join), st.text(max_size=300))
def test_any_pattern_compiles_or_is_refused_and_any_search_ends_at_once(
    pattern: str, text: str
) -> None:
    try:
        compile_pattern(pattern)
    except ValueError:
        return
    started = time.process_time()
    pattern_found(pattern, text * 30)
    assert time.process_time() - started < 1
