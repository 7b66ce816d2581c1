"""User templates are plain text with named fields: nothing in them is evaluated."""

from __future__ import annotations

from datetime import UTC, datetime
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from digest.config import SUBJECT_FIELDS, parse_config
from digest.deliver.message import email_subject
from digest.errors import ConfigError
from digest.models import Period
from digest.text import fill_template, template_problem

PERIOD = Period("2026-W47", datetime(2026, 11, 16, tzinfo=UTC), datetime(2026, 11, 23, tzinfo=UTC))


def test_the_subject_fills_in_its_documented_fields() -> None:
    subject = email_subject("Digest {period}, {dates} {{braces}}", PERIOD)
    assert subject == "Digest 2026-W47, 16–22 Nov 2026 {braces}"


@pytest.mark.parametrize(
    ("template", "problem"),
    [
        ("{period.__class__.__mro__}", "unknown field {period.__class__.__mro__}"),
        ("{period[0]}", "unknown field {period[0]}"),
        ("{0}", "unknown field {0}"),
        ("{}", "unknown field {}"),
        ("{title}", "unknown field {title}; the fields are {period}, {dates}"),
        ("{dates:>999999999}", "{dates} takes no format spec or conversion"),
        ("{dates!r}", "{dates} takes no format spec or conversion"),
        ("{dates", "not a template"),
        ("}", "not a template"),
    ],
)
def test_a_subject_with_code_in_it_is_a_config_error_naming_key_and_line(
    template: str, problem: str, tmp_path: Path
) -> None:
    text = f'[digest]\ntimezone = "UTC"\n\n[email]\nenabled = false\nsubject = "{template}"\n'
    with pytest.raises(ConfigError) as raised:
        parse_config(text, tmp_path / "digest.toml")
    assert f"digest.toml:6: email.subject: {problem}" in str(raised.value)


@given(st.text(max_size=40))
def test_any_template_fills_in_or_is_refused_with_a_reason(template: str) -> None:
    values = {"period": "P", "dates": "D"}
    problem = template_problem(template, SUBJECT_FIELDS)
    if problem is None:
        assert fill_template(template, values) == template.format(**values)  # plain fields only
    else:
        with pytest.raises(ValueError, match="field|template"):
            fill_template(template, values)
