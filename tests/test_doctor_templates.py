"""`digest doctor` checks [output] templates_dir: digest.md.j2 and mail.html.j2 there render a
sample week in the sandbox, any other *.j2 there parses; a failure is one line naming the
file and the line, and doctor exits 1."""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from click.testing import CliRunner, Result

from digest.cli import cli


def doctor(tmp_path: Path) -> Result:
    config = tmp_path / "digest.toml"
    config.write_text('[digest]\ndata_dir = "data"\n\n[output]\ntemplates_dir = "templates"\n')
    return CliRunner().invoke(cli, ["doctor", "--local", "--config", str(config)])


@pytest.fixture
def templates(tmp_path: Path) -> Path:
    folder = tmp_path / "templates"
    exported = CliRunner().invoke(cli, ["templates", "export", str(folder)])
    assert exported.exit_code == 0, exported.output
    return folder


def test_the_exported_templates_render_the_sample_week(tmp_path: Path, templates: Path) -> None:
    result = doctor(tmp_path)

    assert result.exit_code == 0, result.output
    for name in ("digest.md.j2", "mail.html.j2"):
        assert f"template {name}: ok ({templates / name} renders a sample week)" in result.output


@pytest.mark.parametrize(
    ("name", "text", "line", "why"),
    [
        ("digest.md.j2", "# {{ label }}\n\n{{ 1 // 0 }}\n", 3, "integer division"),
        ("mail.html.j2", "<p>{{ body }}</p>\n{% if %}\n", 2, "Expected an expression"),
        ("parts.j2", "{% macro item(x) %}\n{{ x }\n{% endmacro %}\n", 2, "unexpected '}'"),
    ],
)
def test_a_template_that_fails_is_named_with_its_line(
    tmp_path: Path, templates: Path, name: str, text: str, line: int, why: str
) -> None:
    (templates / name).write_text(text)

    result = doctor(tmp_path)

    assert result.exit_code == 1
    [reported] = [row for row in result.output.splitlines() if row.startswith(f"template {name}")]
    assert reported.startswith(f"template {name}: problem: template error: {templates / name}:")
    assert f"{templates / name}:{line}: " in reported and why in reported
    assert reported.endswith("`digest templates export DIR` writes working ones")


def test_a_template_that_is_a_fifo_is_named_at_once(tmp_path: Path, templates: Path) -> None:
    (templates / "digest.md.j2").unlink()
    os.mkfifo(templates / "digest.md.j2")

    result = doctor(tmp_path)

    assert result.exit_code == 1
    assert (
        f"template digest.md.j2: problem: template error: {templates / 'digest.md.j2'} is not a"
        " regular file (a FIFO, device or folder)"
    ) in result.output
