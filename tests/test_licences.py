"""The licence check of .ci/licences.py: what it accepts, and how it reads a package's licence."""

from __future__ import annotations

import importlib.util
from importlib.metadata import PathDistribution
from pathlib import Path
from typing import Any

import pytest


def ci_licences() -> Any:
    path = Path(__file__).parents[1] / ".ci" / "licences.py"
    spec = importlib.util.spec_from_file_location("ci_licences", path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


LICENCES = ci_licences()


def package(tmp_path: Path, *fields: str) -> PathDistribution:
    """An installed package's metadata as pip leaves it, with these header lines."""
    info = tmp_path / "example-1.0.dist-info"
    info.mkdir(parents=True)
    (info / "METADATA").write_text(
        "Metadata-Version: 2.4\nName: example\nVersion: 1.0\n" + "".join(f"{f}\n" for f in fields)
    )
    return PathDistribution(info)


@pytest.mark.parametrize(
    ("expression", "accepted"),
    [
        ("MIT", True),
        ("BSD-3-Clause AND 0BSD AND MIT AND Zlib AND CC0-1.0", True),
        ("MPL-1.1 OR GPL-2.0-only OR LGPL-2.1-or-later", True),
        ("Apache-2.0 WITH LLVM-exception", True),
        ("GPL-2.0-or-later", False),
        ("MIT AND GPL-3.0-only", False),
        ("(MIT AND GPL-2.0-only) OR LGPL-3.0-only", False),
        ("LGPL-3.0-or-later", False),
        ("?: no licence declared", False),
    ],
)
def test_an_expression_is_accepted_when_it_holds_with_the_accepted_licences(
    expression: str, accepted: bool
) -> None:
    assert LICENCES.accepted(expression) is accepted


def test_a_licence_is_read_from_the_expression_the_field_or_the_classifiers(
    tmp_path: Path,
) -> None:
    assert (
        LICENCES.licence(package(tmp_path / "a", "License-Expression: GPL-3.0-only"))
        == "GPL-3.0-only"
    )
    assert LICENCES.licence(package(tmp_path / "b", "License: Apache 2.0")) == "Apache-2.0"
    whole_text = "License: MIT License\n        \n        Permission is hereby granted"
    assert LICENCES.licence(package(tmp_path / "c", whole_text)) == "MIT"
    classifiers = (
        "Classifier: License :: OSI Approved",
        "Classifier: License :: OSI Approved :: GNU General Public License v3 (GPLv3)",
    )
    read = LICENCES.licence(package(tmp_path / "d", *classifiers))
    assert read == "GNU General Public License v3 (GPLv3)" and not LICENCES.accepted(read)
    assert LICENCES.licence(package(tmp_path / "e")) == "?: no licence declared"
