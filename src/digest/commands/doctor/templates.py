"""Your templates ([output] templates_dir): each of digest.md.j2 and mail.html.j2 there is
rendered, in the sandbox as a run renders it, with a small week made up here (a read page
with its note, a saved post, a page that failed); any other *.j2 there (what they include)
is parsed. A failure is the one line a run would give, naming the file and the line."""

from __future__ import annotations

from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path

from digest import sandbox
from digest.commands.doctor.check import Check
from digest.compose.digest import Backlog, render_digest
from digest.compose.footer import Provenance
from digest.compose.markdown import MD_FILTERS
from digest.compose.ranking import History
from digest.compose.usertemplates import BUILT_IN, environment
from digest.compose.week import week_context
from digest.config import Config
from digest.deliver.message import MAIL_TEMPLATE, MailTemplate
from digest.models import Item, ItemKind, ItemState, Note, NoteBasis, Period, WeekSummary
from digest.periods import period_containing
from digest.rules import RulesOutcome

FIX = "correct the file at the line named; `digest templates export DIR` writes working ones"
NOTE = "How a server keeps many requests' caches in pages, and why it matters."
POINTS = ("Pages, not one block per request", "Less memory wasted")
FAILED, NOTED = ItemState.FAILED, ItemState.NOTED
SAMPLE_URLS = ("https://example.org/paged-attention", "https://social.example/@ada/1")


def check_templates(config: Config) -> Iterator[Check]:
    folder = config.output.templates_dir
    if folder is None:
        return
    if not folder.is_dir():
        yield Check("templates", False, f"{folder} is not a folder", "create it or correct it")
        return
    period = period_containing(datetime.now(UTC), config.digest.zone)
    markdown = ""
    for name in sorted(p.name for p in folder.glob("*.j2") if not p.name.startswith(".")):
        if name == BUILT_IN[0]:
            rendered = render_digest(_sample_context(config, period), folder)
            markdown, problem = rendered.text, rendered.problem
        elif name == MAIL_TEMPLATE:
            problem = _mail_problem(folder, period, markdown)
        else:
            problem = _parse_problem(folder, name)
        if problem:
            yield Check(f"template {name}", False, problem, FIX)
        else:
            yield Check(f"template {name}", True, f"{folder / name} renders a sample week")


def _mail_problem(folder: Path, period: Period, markdown: str) -> str | None:
    mail = MailTemplate(folder, period, full_copy="")
    mail.page(markdown or "# A sample week\n", f"Digest {period.label}", SAMPLE_URLS)
    return mail.problem


def _parse_problem(folder: Path, name: str) -> str | None:
    """What stops the template `name` (a part the others include) from loading, if anything."""
    try:
        environment(folder, html=False, filters=MD_FILTERS).get_template(name)
    except Exception as exc:  # the template is the user's code: any failure is its own
        return f"template error: {sandbox.problem(exc, folder / name)}"
    return None


def _sample_context(config: Config, period: Period) -> dict[str, object]:
    saved = period.start + timedelta(days=1)
    items = [
        _item(1, SAMPLE_URLS[0], "Paged attention, explained", ItemKind.LINK, saved),
        _item(2, SAMPLE_URLS[1], "A thread on schedulers", ItemKind.POST, saved),
        _item(3, "https://example.net/gone", None, ItemKind.LINK, saved, failed=True),
    ]
    week = RulesOutcome(shown=items)
    return week_context(config, period, week, WeekSummary(()), History(), Backlog(), Provenance())


def _item(
    number: int,
    url: str,
    title: str | None,
    kind: ItemKind,
    saved: datetime,
    *,
    failed: bool = False,
) -> Item:
    """A sample item: noted, or failed (a 404) without a note."""
    if failed:
        return Item(
            number, url, url, title, kind, saved, None, None, FAILED, 1, "HTTP 404", None, None
        )
    basis = NoteBasis.POST_TEXT if kind is ItemKind.POST else NoteBasis.FULL_TEXT
    note = Note(NOTE, POINTS, ("llm", "serving"), basis)
    return Item(
        number, url, url, title, kind, saved, None, None, NOTED, 1, None, None, None, note=note
    )
