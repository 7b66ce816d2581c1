"""Your templates: `[output] templates_dir` holding `digest.md.j2` or `mail.html.j2`
replaces the built-in one (a Jinja loader that looks there first).

Your templates render in digest.sandbox (the documented fields only, bounded in time and
size). A template of yours that fails (it does not parse, raises or goes past a bound while
rendering) costs nothing but its own look: the built-in one is used instead, and the
failure is one line naming the file and line, reported as a failed delivery (exit 3).
"""

from __future__ import annotations

import os
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from functools import cache
from pathlib import Path
from typing import Any

import jinja2

from digest import sandbox

BUILT_IN = ("digest.md.j2", "mail.html.j2")  # `digest templates export DIR`


@dataclass(frozen=True)
class Rendered:
    text: str
    problem: str | None = None  # the user's template failed: the built-in was used


def environment(
    templates_dir: Path | None, *, html: bool, filters: Mapping[str, Callable[..., str]]
) -> jinja2.Environment:
    """Templates from `templates_dir` first, then the built-in ones."""
    return _environment(templates_dir, html, tuple(sorted(filters.items())))


@cache
def _environment(
    templates_dir: Path | None, html: bool, filters: tuple[tuple[str, Callable[..., str]], ...]
) -> jinja2.Environment:
    loaders: list[jinja2.BaseLoader] = [jinja2.PackageLoader("digest.compose", "templates")]
    if templates_dir is not None:
        loaders.insert(0, sandbox.UserFolderLoader(templates_dir))
    return sandbox.environment(
        jinja2.ChoiceLoader(loaders),
        dict(filters),
        autoescape=html,  # markdown is escaped by its md_* filters instead
        trim_blocks=True,
        lstrip_blocks=True,
        keep_trailing_newline=True,
    )


def is_overridden(templates_dir: Path | None, name: str) -> bool:
    """A file (or a FIFO, device or folder, which fails as a template) of that name is there."""
    return templates_dir is not None and os.path.lexists(templates_dir / name)


def render(
    name: str,
    context: Mapping[str, Any],
    templates_dir: Path | None,
    built_in: Callable[[], str],
    *,
    html: bool = False,
    filters: Mapping[str, Callable[..., str]] | None = None,
) -> Rendered:
    """`name` from `templates_dir` rendered with `context`, or `built_in()` when there is
    none there or it fails (with the failure in one line)."""
    if not is_overridden(templates_dir, name):
        return Rendered(built_in())
    env = environment(templates_dir, html=html, filters=filters or {})
    try:
        return Rendered(sandbox.render(env.get_template(name), context))
    except Exception as exc:  # the template is the user's code: any failure is its own
        path = (templates_dir or Path()) / name
        line = sandbox.problem(exc, path)
        return Rendered(built_in(), f"template error: {line}; the built-in {name} was used")
