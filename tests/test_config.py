"""The config parser on any input: a Config or a ConfigError naming the file, never a crash."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from digest.config import Config, parse_config
from digest.errors import ConfigError

PATH = Path("/etc/digest/digest.toml")
SECTIONS = ["digest", "sources", "fetch", "llm", "offline", "email", "output", "log", "schedule"]
KEYS = [
    "data_dir",
    "timezone",
    "name",
    "kind",
    "url",
    "path",
    "concurrency",
    "timeout_s",
    "provider",
    "note_sentences",
    "port",
    "to",
    "from",
    "collect",
    "allow_private_addresses",
    "prices",
    "nme",
    "x",
]
scalars = st.one_of(
    st.integers(-(2**40), 2**40),
    st.floats(allow_nan=False, allow_infinity=False),
    st.booleans(),
    st.text(max_size=20),
)
values = st.one_of(scalars, st.lists(scalars, max_size=3))


def toml_value(value: object) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, list):
        return "[" + ", ".join(toml_value(v) for v in value) + "]"
    if isinstance(value, str):
        return json.dumps(value)  # a JSON string is a TOML basic string
    return repr(value)


tables = st.lists(
    st.tuples(
        st.sampled_from(SECTIONS),
        st.booleans(),  # [[array of tables]] or [table]
        st.dictionaries(st.sampled_from(KEYS), values, max_size=5),
    ),
    max_size=5,
)


def as_toml(parts: list[tuple[str, bool, dict[str, object]]]) -> str:
    lines = []
    for section, array, body in parts:
        lines.append(f"[[{section}]]" if array else f"[{section}]")
        lines += [f"{json.dumps(key)} = {toml_value(value)}" for key, value in body.items()]
    return "\n".join(lines) + "\n"


def check(text: str) -> None:
    try:
        config = parse_config(text, PATH)
    except ConfigError as exc:
        lines = str(exc).splitlines()
        assert lines and all(line.startswith(f"config error: {PATH}") for line in lines)
    else:
        assert isinstance(config, Config)


@pytest.mark.slow
@settings(max_examples=300)
@given(tables)
def test_any_table_shaped_config_loads_or_names_each_problem(
    parts: list[tuple[str, bool, dict[str, object]]],
) -> None:
    check(as_toml(parts))


@pytest.mark.slow
@settings(max_examples=300)
@given(st.text(max_size=200))
def test_any_text_loads_or_is_a_config_error(text: str) -> None:
    check(text)


def test_the_file_cannot_set_where_it_came_from() -> None:
    with pytest.raises(ConfigError) as raised:
        parse_config('path = "/elsewhere.toml"\n', PATH)

    assert str(raised.value) == f"config error: {PATH}:1: path: unknown key"
