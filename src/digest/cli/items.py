"""The commands over the items stored: `read`, `search`, `star`, `status`, `export`,
`rules test`."""

from __future__ import annotations

import sys
from dataclasses import replace
from datetime import date, datetime
from typing import TYPE_CHECKING

import click

from digest.cli.base import (
    WEEK,
    cli,
    common_options,
    config,
    locked,
    week_period,
)
from digest.errors import BadSearch, DigestError
from digest.models import ItemKind, ItemState
from digest.text import for_terminal

if TYPE_CHECKING:  # config pulls in pydantic: imported when a command needs it
    from digest.config import Config
    from digest.store import SearchFilter, SearchHit, Store


@cli.command()
@click.argument("refs", nargs=-1, required=True, metavar="ID|URL...")
@common_options
@locked
def read(refs: tuple[str, ...]) -> None:
    """Mark items read, by id or saved URL (any form: www., a trailing slash, no scheme):
    they leave "Still unread from earlier weeks"."""
    from digest.clock import utc_now
    from digest.commands.marks import mark_read
    from digest.store import open_store

    with open_store(config().db_path) as store:
        for line in mark_read(store, refs, utc_now()):
            click.echo(for_terminal(line))


@cli.command()
@click.argument("query")
@click.option("--week", metavar="YYYY-Www|last", help="Only items saved in this ISO week.")
@click.option("--since", metavar="YYYY-MM-DD|YYYY-Www", help="Only items saved from then on.")
@click.option("--source", metavar="NAME", help="Only items from this source.")
@click.option("--kind", type=click.Choice([k.value for k in ItemKind]), help="Only this kind.")
@click.option("--state", type=click.Choice([s.value for s in ItemState]), help="Only this state.")
@click.option("--unread", is_flag=True, help="Only items not marked read.")
@click.option("--limit", type=click.IntRange(1, 1_000), default=20, show_default=True)
@click.option("--json", "as_json", is_flag=True, help="One JSON object per hit and line.")
@common_options
def search(
    query: str,
    week: str | None,
    since: str | None,
    source: str | None,
    kind: str | None,
    state: str | None,
    unread: bool,
    limit: int,
    as_json: bool,
) -> None:
    """Search everything saved (title, text, note, saved context, tags, host), best first.

    QUERY is FTS5 syntax: words (stemmed: 'serve' finds 'serving'), "a phrase", prefix*,
    AND, OR, NOT, NEAR(a b), column:word (title, text, note, context, tags, host; section:
    and topic: search tags, which hold the journal's headings and list topics; site: is host:,
    as in host:fasterthanli.me). Plain words with punctuation that FTS5 refuses (c++,
    vllm.ai) are searched as phrases. At most 1,000 characters and 64 terms; a search stops
    after 5 s."""
    from digest.clock import utc_now
    from digest.commands.search import query_problem, show_hits, with_columns, write_json
    from digest.errors import SearchTooSlow
    from digest.store import SearchFilter, open_store

    if (problem := query_problem(query)) is not None:
        raise click.BadParameter(problem, param_hint="QUERY")
    cfg = config()
    if week and since:
        raise click.UsageError("--week and --since cannot go together")
    period = week_period(cfg, week, utc_now()) if week else None
    narrow = SearchFilter(
        start=period.start if period else _since(cfg, since),
        end=period.end if period else None,
        source=source,
        kind=ItemKind(kind) if kind else None,
        state=ItemState(state) if state else None,
        unread=unread,
    )
    with open_store(cfg.db_path) as store:
        _known_source(store, source)
        try:
            hits = _search(store, with_columns(query), narrow, limit)
        except BadSearch as exc:
            hint = (
                ""
                if isinstance(exc, SearchTooSlow)
                else ' (words with punctuation go in "double quotes")'
            )
            click.echo(for_terminal(f"digest: {exc}{hint}"), err=True)
            sys.exit(2)
    if as_json:
        write_json(hits, cfg.digest.zone, sys.stdout)
    else:
        from rich.console import Console

        show_hits(hits, cfg.digest.zone, Console(highlight=False))
    if not hits:
        click.echo(for_terminal(f"nothing found for {query!r}"), err=True)


def _search(store: Store, query: str, narrow: SearchFilter, limit: int) -> list[SearchHit]:
    """The hits of `query`, or of its words as phrases when FTS5 cannot parse it."""
    from digest.commands.search import as_phrases
    from digest.errors import SearchTooSlow

    try:
        return store.search(query, narrow, limit)
    except SearchTooSlow:
        raise
    except BadSearch:
        if (phrases := as_phrases(query)) is None:
            raise
    click.echo(for_terminal(f"searched for {phrases} (plain words, not FTS5 syntax)"), err=True)
    return store.search(phrases, narrow, limit)


def _since(cfg: Config, since: str | None) -> datetime | None:
    if since is None:
        return None
    from digest.clock import utc_now
    from digest.periods import local_midnight

    try:
        return local_midnight(date.fromisoformat(since), cfg.digest.zone)
    except ValueError:
        try:
            return week_period(cfg, since, utc_now()).start
        except click.BadParameter as exc:
            raise click.BadParameter(
                f"not a date (YYYY-MM-DD) or a week: {exc.message}", param_hint="--since"
            ) from exc


def _known_source(store: Store, source: str | None) -> None:
    if source is not None and source not in {row.name for row in store.list_sources()}:
        raise click.BadParameter(
            f"no source named {source!r} (`digest sources list` names them)",
            param_hint="--source",
        )


@cli.command()
@click.argument("refs", nargs=-1, metavar="ID|URL...")
@click.option("--unstar", is_flag=True, help="Take the star off instead.")
@click.option("--list", "list_stars", is_flag=True, help="List the starred items, newest first.")
@common_options
@locked
def star(refs: tuple[str, ...], unstar: bool, list_stars: bool) -> None:
    """Star items by id or saved URL (any form: www., a trailing slash, no scheme): the
    ranking learns from them. --list shows them."""
    from digest.clock import utc_now
    from digest.commands.marks import list_stars as starred_lines
    from digest.commands.marks import mark_starred
    from digest.store import open_store

    if list_stars == bool(refs):
        raise click.UsageError("give ids or URLs to star, or --list (not both)")
    with open_store(config().db_path) as store:
        lines = starred_lines(store) if list_stars else mark_starred(store, refs, utc_now(), unstar)
        for line in lines:
            click.echo(for_terminal(line))


@cli.command()
@click.argument("refs", nargs=-1, required=True, metavar="ID|URL...")
@common_options
@locked
def unread(refs: tuple[str, ...]) -> None:
    """Take back the read mark of items, by id or saved URL."""
    from digest.commands.marks import mark_unread
    from digest.store import open_store

    with open_store(config().db_path) as store:
        for line in mark_unread(store, refs):
            click.echo(for_terminal(line))


@cli.group()
@common_options
def highlight() -> None:
    """Highlights imported from Kindle clippings or a Readwise export."""


@highlight.command("done")
@click.argument("ids", nargs=-1, required=True, type=int)
@common_options
@locked
def highlight_done(ids: tuple[int, ...]) -> None:
    """Retire highlights (by the id "From your highlights" shows): never brought back again."""
    from digest.clock import utc_now
    from digest.store import open_store
    from digest.text import shorten

    with open_store(config().db_path) as store:
        retired = {i: store.retire_highlight(i, utc_now()) for i in ids}
    for highlight_id, text in retired.items():
        if text is not None:
            click.echo(for_terminal(f"done: {highlight_id} {shorten(text, 70)}"))
    if unknown := [str(i) for i, text in retired.items() if text is None]:
        raise DigestError(f"no highlight with id {', '.join(unknown)}")


@cli.group()
@common_options
def rules() -> None:
    """The reader's [[rules]]: mute, skip notes, pin, tag, put in a section."""


@rules.command("test")
@WEEK
@common_options
def rules_test(week: str | None) -> None:
    """Per rule: the items it matches in the week, and how the digest would read without it
    (composed offline from the store: no model call, nothing written)."""
    from digest.clock import utc_now
    from digest.compose.rulecheck import rules_report

    cfg = config()
    for line in rules_report(cfg, week_period(cfg, week, utc_now())):
        click.echo(for_terminal(line))


@cli.command()
@click.option(
    "--json", "as_json", is_flag=True, help="The versioned document of docs/status-json.md."
)
@click.option(
    "--all", "list_all", is_flag=True, help="List every item to look at, not the first 20."
)
@click.option("--failed", "failed_only", is_flag=True, help="Only items whose fetch failed.")
@click.option("--source", metavar="NAME", help="Only this source and its items.")
@common_options
def status(as_json: bool, list_all: bool, failed_only: bool, source: str | None) -> None:
    """Sources and their health, items by state, items to look at and why, recent runs,
    LLM usage."""
    from digest.collect.stage import without_sources
    from digest.commands.status import StatusQuery, gather_status, render_status
    from digest.runtime.lock import live_holder_started
    from digest.store import open_store

    cfg = config()
    query = StatusQuery(list_all, failed_only, source, live_holder_started(cfg.data_dir))
    with open_store(cfg.db_path) as store:
        _known_source(store, source)
        data = gather_status(store, replace(query, fresh=without_sources(cfg, store)))
    render_status(data, as_json=as_json)


@cli.command()
@click.option("--week", metavar="YYYY-Www|last", help="Only this ISO week (default: every item).")
@click.option(
    "--format", "fmt", type=click.Choice(["jsonl", "csv"]), default="jsonl", show_default=True
)
@common_options
def export(week: str | None, fmt: str) -> None:
    """Every item of the period (default: all) with its text, note and state."""
    from digest.clock import utc_now
    from digest.commands.export import write_export
    from digest.store import open_store

    cfg = config()
    period = week_period(cfg, week, utc_now()) if week else None
    with open_store(cfg.db_path) as store:
        write_export(store, period, fmt, sys.stdout)
