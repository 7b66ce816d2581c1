"""The commands that add what is read: `import`, `add`, `sources`."""

from __future__ import annotations

from collections.abc import Callable
from datetime import datetime
from pathlib import Path
from typing import TYPE_CHECKING

import click

from digest.cli.base import (
    cli,
    common_options,
    config,
    locked,
)
from digest.text import for_terminal

if TYPE_CHECKING:  # config pulls in pydantic: imported when a command needs it
    from digest.config import Config
    from digest.store import Store


@cli.command("import")
@click.argument("files", nargs=-1, required=True, type=click.Path(path_type=Path))
@click.option(
    "--format",
    "forced_format",
    help="Force a format over detection (an unknown name lists the formats).",
)
@common_options
@locked
def import_(files: tuple[Path, ...], forced_format: str | None) -> None:
    """Import saved links and posts from files or folders (format detected from content);
    an OPML file adds its feeds as feed sources. A file that cannot be imported is named
    on stderr and the others go on; exit 1 only when every file failed."""
    from digest.clock import utc_now
    from digest.collect.files import describe, import_files
    from digest.collect.finding import Unimported
    from digest.collect.importers import supported_formats
    from digest.store import open_store

    if forced_format is not None and forced_format not in (formats := supported_formats()):
        raise click.BadParameter(
            f"unknown format {forced_format!r}; supported: {', '.join(formats)}",
            param_hint="--format",
        )
    cfg = config()
    with open_store(cfg.db_path) as store:
        outcomes = import_files(
            store,
            list(files),
            zone=cfg.digest.zone,
            now=utc_now(),
            forced_format=forced_format,
            declared=cfg.sources,
        )
    failed = 0
    for outcome in outcomes:
        is_failure = isinstance(outcome, Unimported) and outcome.failed
        failed += is_failure
        for line in describe(outcome):
            click.echo(for_terminal(f"digest: {line}" if is_failure else line), err=is_failure)
    if failed and failed == len(outcomes):
        click.get_current_context().exit(1)


@cli.group()
@common_options
def sources() -> None:
    """The sources polled on collect: the config's and the feeds imported from OPML."""


@sources.command("list")
@common_options
def sources_list() -> None:
    """Every source with its origin, status, item count and location."""
    from digest.collect.feedlists import all_sources
    from digest.store import open_store

    cfg = config()
    with open_store(cfg.db_path) as store:
        rows = all_sources(store, cfg.sources)
    columns = ("name", "kind", "origin", "status", "items", "location")
    table = [columns, *(tuple(for_terminal(str(row[c])) for c in columns) for row in rows)]
    widths = [max(len(line[i]) for line in table) for i in range(len(columns) - 1)]
    for line in table:
        click.echo("  ".join([*(v.ljust(w) for v, w in zip(line, widths, strict=False)), line[-1]]))


@sources.command("export")
@click.option("--opml", "as_opml", is_flag=True, help="As OPML 2.0 (the one format so far).")
@click.option(
    "--include-secrets",
    is_flag=True,
    help="Keep the feeds' passwords and tokens (shown as *** without it), and put a basic"
    " auth's login into its feed's URL.",
)
@common_options
def sources_export(as_opml: bool, include_secrets: bool) -> None:
    """Print every feed source, configured and imported, as OPML (folders, categories and
    site links kept: `digest import` reads it back)."""
    from digest.collect.feedlists import feeds_as_opml
    from digest.store import open_store

    if not as_opml:
        raise click.UsageError("say which format: --opml")
    cfg = config()
    with open_store(cfg.db_path) as store:
        click.echo(feeds_as_opml(store, cfg.sources, include_secrets=include_secrets), nl=False)


@sources.command("add")
@click.argument("url")
@click.option("--name", help="Its name (default: the feed's host).")
@click.option("--category", help="Its topic, also its OPML folder ('Tech/AI': two levels).")
@common_options
def sources_add(url: str, name: str | None, category: str | None) -> None:
    """Add a feed: to the config file (its comments kept), or the store without one."""
    from digest.clock import utc_now
    from digest.collect.manage import add_feed

    _manage(
        lambda cfg, store: add_feed(cfg, store, url, name=name, category=category, now=utc_now())
    )


@sources.command("remove")
@click.argument("name")
@common_options
def sources_remove(name: str) -> None:
    """Stop collecting a source and stop listing it; the items it brought stay."""
    from digest.clock import utc_now
    from digest.collect.manage import remove_source

    _manage(lambda cfg, store: remove_source(cfg, store, name, utc_now()))


@sources.command("pause")
@click.argument("name")
@common_options
def sources_pause(name: str) -> None:
    """Stop collecting a source until `digest sources resume NAME`."""
    from digest.collect.manage import set_paused

    _manage(lambda cfg, store: set_paused(cfg, store, name, True))


@sources.command("resume")
@click.argument("name")
@common_options
def sources_resume(name: str) -> None:
    """Collect a paused source again."""
    from digest.collect.manage import set_paused

    _manage(lambda cfg, store: set_paused(cfg, store, name, False))


@sources.command("rename")
@click.argument("old")
@click.argument("new")
@common_options
def sources_rename(old: str, new: str) -> None:
    """Give a source another name; its items and poll state go with it."""
    from digest.collect.manage import rename_source

    _manage(lambda cfg, store: rename_source(cfg, store, old, new))


def _manage(change: Callable[[Config, Store], str]) -> None:
    """Run one `digest sources` change and print what it did."""
    from digest.collect.manage import editing
    from digest.store import open_store

    with editing(config()) as cfg, open_store(cfg.db_path) as store:
        click.echo(for_terminal(change(cfg, store)))


@cli.command()
@click.argument("url")
@click.option("--title", help="Title to show for the link.")
@click.option("--note", help="Why you saved it; shown with the item.")
@click.option(
    "--saved-at",
    type=click.DateTime(["%Y-%m-%d", "%Y-%m-%d %H:%M", "%Y-%m-%dT%H:%M", "%Y-%m-%dT%H:%M:%S"]),
    help="When you saved it, in the configured time zone (default: now).",
)
@common_options
@locked
def add(url: str, title: str | None, note: str | None, saved_at: datetime | None) -> None:
    """Save one link now."""
    from digest.clock import utc_now
    from digest.collect.files import add_url
    from digest.store import open_store

    cfg = config()
    when = (
        saved_at.replace(tzinfo=cfg.digest.zone) if saved_at and not saved_at.tzinfo else saved_at
    )
    with open_store(cfg.db_path) as store:
        is_new = add_url(store, url, title=title, note=note, saved_at=when, now=utc_now())
    shown = for_terminal(url)
    click.echo(f"saved {shown}" if is_new else f"already saved: {shown}")
