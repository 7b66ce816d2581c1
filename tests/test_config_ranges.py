"""Every number in the config has a documented range, checked at load."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from pydantic import BaseModel

from digest.config import Config, parse_config, range_words
from digest.errors import ConfigError

DOC = Path(__file__).parent.parent / "docs" / "config-ranges.md"
HEADER = "| key | range |\n| --- | --- |\n"


def numbers(model: type[BaseModel], prefix: str) -> Iterator[tuple[str, str | None]]:
    """Every number field under `model` as ("section.key", its range in words)."""
    for name, field in model.model_fields.items():
        key = f"{prefix}{field.alias or name}"
        annotation = str(field.annotation)
        nested = [a for a in getattr(field.annotation, "__args__", (field.annotation,))]
        models = [a for a in nested if isinstance(a, type) and issubclass(a, BaseModel)]
        for inner in models:
            yield from numbers(inner, f"{key}.")
        if not models and ("int" in annotation or "float" in annotation):
            yield key, range_words(field.metadata)


def table() -> str:
    rows = sorted(set(numbers(Config, "")))
    return HEADER + "".join(f"| `{key}` | {words} |\n" for key, words in rows)


def test_every_number_has_a_lower_and_an_upper_bound() -> None:
    for key, words in numbers(Config, ""):
        assert words and " and at most " in words, f"{key}: {words}"


def test_the_ranges_are_documented_as_they_are_checked() -> None:
    assert DOC.read_text().endswith(table()), "docs/config-ranges.md: regenerate the table"


@pytest.mark.parametrize(
    ("text", "line", "message"),
    [
        (
            "[fetch]\nretry_base_s = 1e308\nretry_max_s = 1e308\n",
            2,
            "fetch.retry_base_s: must be at least 0 and at most 86_400, not 1e+308",
        ),
        ("[fetch]\n\ntimeout_s = inf\n", 3, "fetch.timeout_s: must be a finite number, not inf"),
        ("[llm]\nbudget_usd = nan\n", 2, "llm.budget_usd: must be a finite number"),
        (
            "[email]\nport = 0\n",
            2,
            "email.port: must be at least 1 and at most 65_535, not 0",
        ),
        (
            '[llm.prices]\n"m" = { input_per_mtok = -1, output_per_mtok = 0 }\n',
            None,
            "llm.prices.m.input_per_mtok: must be at least 0 and at most 100_000, not -1",
        ),
    ],
)
def test_a_number_out_of_range_is_refused_at_load_naming_key_line_and_range(
    text: str, line: int | None, message: str, tmp_path: Path
) -> None:
    path = tmp_path / "digest.toml"
    with pytest.raises(ConfigError) as raised:
        parse_config(text, path)
    where = f"{path}:{line}" if line else str(path)
    assert f"config error: {where}: {message}" in str(raised.value)
