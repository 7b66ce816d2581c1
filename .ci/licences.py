"""The licence of every package digest installs, checked against the licences we accept.

    .venv/bin/python .ci/licences.py            # check; exit 1 naming each package refused
    .venv/bin/python .ci/licences.py --write    # and rewrite docs/licences.md

Reads the installed packages' metadata: digest's dependencies and the test extra's, with
everything they pull in. A licence is its SPDX expression (License-Expression), else the
License field when it is a short name, else the trove classifiers (several: any of them).
A package passes when its expression holds with the accepted licences below, or when it is
named in EXCEPTIONS with the reason it may stay. A name not in NAMES fails until it is read
and added. The optional extras (voices: piper-tts, GPL-3.0-or-later; bench) are not checked:
nothing installs them without asking.
"""

from __future__ import annotations

import argparse
import re
import sys
from importlib.metadata import Distribution, PackageNotFoundError, distribution
from pathlib import Path

from packaging.requirements import Requirement

ROOT = Path(__file__).resolve().parent.parent
DOC = ROOT / "docs" / "licences.md"
EXTRAS = ("test",)

# Permissive licences, and file-level weak copyleft (MPL): an MIT project may ship with them.
ACCEPTED = {
    "MIT", "MIT-0", "BSD", "BSD-2-Clause", "BSD-3-Clause", "0BSD", "ISC", "Apache-2.0",
    "PSF-2.0", "Python-2.0", "CNRI-Python", "MPL-1.1", "MPL-2.0", "Unlicense", "CC0-1.0",
    "Zlib", "BSL-1.0", "HPND", "Unicode-3.0", "Public-Domain",
}  # fmt: skip
# Packages whose licence is not accepted above, and why they may stay.
EXCEPTIONS = {
    "lameenc": "LGPL: the LAME encoder, an unmodified library in its own wheel (audio's MP3)",
    "chardet": "LGPL: an unmodified library; readability-lxml requires chardet<6",
}
# How packages spell licences outside SPDX expressions (classifiers' last part, License
# fields), as SPDX ids.
NAMES = {
    "MIT License": "MIT",
    "BSD License": "BSD",
    "The BSD 2-Clause License": "BSD-2-Clause",
    "Apache Software License": "Apache-2.0",
    "Apache 2.0": "Apache-2.0",
    "Apache License 2.0": "Apache-2.0",
    "Apache License, Version 2.0": "Apache-2.0",
    "Apache License Version 2.0": "Apache-2.0",
    "ISC License (ISCL)": "ISC",
    "Python Software Foundation License": "PSF-2.0",
    "PSFL": "PSF-2.0",
    "PSF": "PSF-2.0",
    "Mozilla Public License 2.0 (MPL 2.0)": "MPL-2.0",
    "The Unlicense (Unlicense)": "Unlicense",
    "Public Domain": "Public-Domain",
    "zlib/libpng License": "Zlib",
    "GNU Lesser General Public License v2 or later (LGPLv2+)": "LGPL-2.0-or-later",
    "GNU Lesser General Public License v3 (LGPLv3)": "LGPL-3.0-only",
    "LGPL": "LGPL-2.0-or-later",
}
_SPDX_ID = re.compile(r"^[A-Za-z0-9.+-]+$")


def closure() -> dict[str, tuple[Distribution, str]]:
    """Every installed package digest needs, by name: its distribution and who needs it
    ("core", or the extra that brings it)."""
    found: dict[str, tuple[Distribution, str]] = {}
    for needed_by in ("core", *EXTRAS):
        pending = requirements(distribution("digest"), "" if needed_by == "core" else needed_by)
        while pending:
            requirement = pending.pop()
            if canonical(requirement.name) in found:
                continue
            try:
                dist = distribution(requirement.name)
            except PackageNotFoundError:
                sys.exit(f"licences: {requirement.name} is not installed: pip install -e '.[test]'")
            found[canonical(requirement.name)] = (dist, needed_by)
            pending += requirements(dist, "")
    return dict(sorted(found.items()))


def requirements(dist: Distribution, extra: str) -> list[Requirement]:
    """What `dist` requires for this Python and platform: its core ("") or what `extra` adds."""
    wanted = []
    for line in dist.requires or []:
        req = Requirement(line)
        core = req.marker is None or req.marker.evaluate({"extra": ""})
        if core if not extra else not core and req.marker and req.marker.evaluate({"extra": extra}):
            wanted.append(req)
    return wanted


def canonical(name: str) -> str:
    return re.sub(r"[-_.]+", "-", name).lower()


def licence(dist: Distribution) -> str:
    """The package's licence as an SPDX expression; "?: …" when it cannot be told."""
    meta = dist.metadata.json  # PackageMetadata's mapping, lists where a field repeats
    if expression := meta.get("license_expression"):
        return str(expression).strip()
    field = str(meta.get("license", "")).strip()
    first_line = NAMES.get(field.partition("\n")[0].strip(), "")  # a licence's text, its name first
    named = first_line or NAMES.get(field, field)
    if named and all(_SPDX_ID.match(part) for part in re.split(r"\s+|[()]", named) if part):
        return named
    names = [
        NAMES.get(classifier.rsplit(" :: ", 1)[-1], classifier.rsplit(" :: ", 1)[-1])
        for classifier in meta.get("classifier", [])
        if classifier.startswith("License :: ") and classifier != "License :: OSI Approved"
    ]
    if names:
        return " OR ".join(dict.fromkeys(names))
    return f"?: {field[:60]!r}" if field else "?: no licence declared"


def accepted(expression: str) -> bool:
    """Whether an SPDX expression holds when the ACCEPTED licences hold (AND binds first)."""
    expression = re.sub(r"\s+WITH\s+\S+", "", expression)  # an exception only widens a licence
    while "(" in expression:
        expression = re.sub(
            r"\(([^()]*)\)", lambda m: "MIT" if accepted(m.group(1)) else "?", expression
        )
    return any(
        all(term.strip() in ACCEPTED for term in alternative.split(" AND "))
        for alternative in expression.split(" OR ")
    )


def table(rows: list[tuple[str, str, str, str]]) -> str:
    lines = [
        "# Licences of digest's dependencies",
        "",
        "Written by `.ci/licences.py --write`; `.ci/run` fails on a licence not accepted there",
        "(permissive ones and MPL), unless the package is an exception with its reason.",
        "Optional extras are not listed: `voices` brings piper-tts (GPL-3.0-or-later), `bench`",
        "rouge-score and tiktoken (Apache-2.0, MIT).",
        "",
        "| package | licence | needed by | note |",
        "| --- | --- | --- | --- |",
    ]
    lines += [
        f"| {name} | {expression} | {needed_by} | {note} |"
        for name, expression, needed_by, note in rows
    ]
    return "\n".join(lines) + "\n"


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--write", action="store_true", help=f"rewrite {DOC.relative_to(ROOT)}")
    args = parser.parse_args()
    rows, refused = [], []
    for name, (dist, needed_by) in closure().items():
        expression = licence(dist)
        note = EXCEPTIONS.get(name, "")
        if not note and not accepted(expression):
            refused.append(
                f"licences: {name} {dist.version} is {expression}, not an accepted licence"
            )
        rows.append((name, expression, needed_by, note))
    if args.write:
        DOC.write_text(table(rows))
    elif DOC.exists() and DOC.read_text() != table(rows):
        print(
            f"licences: {DOC.relative_to(ROOT)} is out of date: run .ci/licences.py --write",
            file=sys.stderr,
        )
    for line in refused:
        print(
            line + " (check it, then accept it in .ci/licences.py or drop the package)",
            file=sys.stderr,
        )
    print(f"licences: {len(rows)} packages, {len(refused)} refused")
    return 1 if refused else 0


if __name__ == "__main__":
    sys.exit(main())
