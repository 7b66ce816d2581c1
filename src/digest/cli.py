"""Thin click commands: parse, call one function, print. Errors meet the user only here."""

from __future__ import annotations

import functools
import logging
import sys
import traceback
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from typing import Any, TypeVar

import click

from digest import __version__
from digest.config import Config, load_config
from digest.errors import DeliveryError, DigestError
from digest.models import Period, StageReport

F = TypeVar("F", bound=Callable[..., Any])


@dataclass
class Settings:
    config_path: Path | None = None
    debug: bool = False


def _set_config(ctx: click.Context, _param: click.Parameter, value: Path | None) -> None:
    if value is not None:
        ctx.ensure_object(Settings).config_path = value


def _set_debug(ctx: click.Context, _param: click.Parameter, value: bool) -> None:
    if value:
        ctx.ensure_object(Settings).debug = True


def common_options(command: F) -> F:
    """--config and --debug, accepted before or after the subcommand."""
    command = click.option(
        "--config",
        type=click.Path(path_type=Path, dir_okay=False),
        expose_value=False,
        callback=_set_config,
        help="Config file (default: $DIGEST_CONFIG, else ./config/digest.toml).",
    )(command)
    return click.option(
        "--debug", is_flag=True, expose_value=False, callback=_set_debug, help="Show tracebacks."
    )(command)


class DigestGroup(click.Group):
    def invoke(self, ctx: click.Context) -> Any:
        try:
            return super().invoke(ctx)
        except DigestError as exc:
            if ctx.ensure_object(Settings).debug:
                traceback.print_exc()
            click.echo(f"digest: {exc}", err=True)
            ctx.exit(1)


def settings() -> Settings:
    return click.get_current_context().ensure_object(Settings)


def config() -> Config:
    return load_config(settings().config_path)


def _setup_logging(level: int) -> None:
    from digest.logs import configure_logging

    configure_logging(level)


@click.group(cls=DigestGroup)
@click.version_option(__version__, prog_name="digest")
@common_options
def cli() -> None:
    """Turn what you saved this week into a weekly digest you actually read."""
    _setup_logging(logging.WARNING)


def print_reports(reports: Sequence[StageReport]) -> None:
    """One line per stage, then one line per failure, on stderr."""
    for report in reports:
        click.echo(f"{report.stage}: {report.done} done, {len(report.failures)} failed", err=True)
        for line in report.info:
            click.echo(f"  {line}", err=True)
        for line in report.failures:
            click.echo(f"  ! {line}", err=True)


def locked(command: Callable[..., None]) -> Callable[..., None]:
    """Run the command under the run lock shared with `digest now` and the daemon."""

    @functools.wraps(command)
    def wrapper(*args: Any, wait: bool = False, **kwargs: Any) -> None:
        from digest.runlock import run_lock

        with run_lock(config().data_dir, wait=wait):
            command(*args, **kwargs)

    return click.option("--wait", is_flag=True, help="Wait for another run to finish.")(wrapper)


def _run_stages(command: str, stages: Sequence[str], week: str | None) -> None:
    from digest.clock import utc_now
    from digest.pipeline import run
    from digest.progress import stage_progress

    cfg = config()
    period = _period(cfg, week, utc_now())
    with stage_progress() as progress:
        result = run(cfg, command, period=period, stages=stages, progress=progress)
    print_reports(result.reports)
    if result.path is not None:
        click.echo(str(result.path))


def _period(cfg: Config, week: str | None, now: datetime) -> Period:
    from digest.pipeline import resolve_period

    try:
        return resolve_period(cfg, week, now)
    except ValueError as exc:
        raise click.BadParameter(str(exc), param_hint="--week") from exc


WEEK = click.option(
    "--week", metavar="YYYY-Www|last", help="ISO week, or 'last' (default: the current one)."
)


@cli.command()
@WEEK
@click.option(
    "--dry-run",
    is_flag=True,
    help="Only estimate the LLM calls, tokens and cost of the run, from what is in the store"
    " now: nothing is collected, fetched, sent to the LLM, written or delivered.",
)
@common_options
@locked
def now(week: str | None, dry_run: bool) -> None:
    """Collect, fetch, note, compose and deliver the digest of one week; print its path last."""
    if dry_run:
        from digest.clock import utc_now
        from digest.pipeline import estimate_run

        cfg = config()
        for line in estimate_run(cfg, _period(cfg, week, utc_now())).lines():
            click.echo(line)
        return
    _run_stages("now", ("collect", "fetch", "notes", "deliver"), week)


@cli.command()
@common_options
@locked
def collect() -> None:
    """Collect every source (feeds and files) into the store."""
    _run_stages("collect", ("collect",), None)


@cli.command()
@common_options
@locked
def extract() -> None:
    """Fetch and extract the text of items that are due."""
    _run_stages("extract", ("fetch",), None)


@cli.command()
@common_options
@locked
def summarize() -> None:
    """Write notes for items that have none, or whose text changed."""
    _run_stages("summarize", ("notes",), None)


@cli.command()
@WEEK
@common_options
@locked
def compose(week: str | None) -> None:
    """Compose and deliver the digest of one week from the notes in the store."""
    _run_stages("compose", ("deliver",), week)


@cli.command("import")
@click.argument("files", nargs=-1, required=True, type=click.Path(path_type=Path))
@click.option(
    "--format", "forced_format", help="Force a format (see the error for the list) over detection."
)
@common_options
@locked
def import_(files: tuple[Path, ...], forced_format: str | None) -> None:
    """Import saved links and posts from files or folders (format detected from content);
    an OPML file adds its feeds as feed sources. A file that cannot be imported is named
    on stderr and the others go on; exit 1 only when every file failed."""
    from digest.clock import utc_now
    from digest.collect.files import Unimported, describe, import_files
    from digest.store import open_store

    cfg = config()
    store = open_store(cfg.db_path)
    try:
        outcomes = import_files(
            store,
            list(files),
            zone=cfg.digest.zone,
            now=utc_now(),
            forced_format=forced_format,
            declared=cfg.sources,
        )
    finally:
        store.close()
    failed = 0
    for outcome in outcomes:
        is_failure = isinstance(outcome, Unimported) and outcome.failed
        failed += is_failure
        for line in describe(outcome):
            click.echo(f"digest: {line}" if is_failure else line, err=is_failure)
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
    store = open_store(cfg.db_path)
    try:
        rows = all_sources(store, cfg.sources)
    finally:
        store.close()
    columns = ("name", "kind", "origin", "status", "items", "location")
    table = [columns, *(tuple(str(row[c]) for c in columns) for row in rows)]
    widths = [max(len(line[i]) for line in table) for i in range(len(columns) - 1)]
    for line in table:
        click.echo("  ".join([*(v.ljust(w) for v, w in zip(line, widths, strict=False)), line[-1]]))


@sources.command("export")
@click.option("--opml", "as_opml", is_flag=True, help="As OPML 2.0 (the one format so far).")
@common_options
def sources_export(as_opml: bool) -> None:
    """Print every feed source, configured and imported, as OPML."""
    from digest.collect.feedlists import feeds_as_opml
    from digest.store import open_store

    if not as_opml:
        raise click.UsageError("say which format: --opml")
    cfg = config()
    store = open_store(cfg.db_path)
    try:
        click.echo(feeds_as_opml(store, cfg.sources), nl=False)
    finally:
        store.close()


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
    store = open_store(cfg.db_path)
    try:
        is_new = add_url(store, url, title=title, note=note, saved_at=when, now=utc_now())
    finally:
        store.close()
    click.echo(f"saved {url}" if is_new else f"already saved: {url}")


@cli.command()
@common_options
def daemon() -> None:
    """Run the [schedule] until SIGINT/SIGTERM: collect often, deliver the digest weekly."""
    import threading

    from digest.daemon import run_daemon
    from digest.jobs import daemon_jobs
    from digest.logs import config_secrets, configure_logging

    cfg = config()
    configure_logging(logging.INFO, cfg.log, config_secrets(cfg))
    logging.getLogger("apscheduler").setLevel(logging.WARNING)  # its INFO lines repeat ours
    stop = threading.Event()
    code = run_daemon(
        cfg.schedule,
        daemon_jobs(cfg, stop),
        zone=cfg.digest.zone,
        lock_dir=cfg.data_dir,
        state_path=cfg.data_dir / "daemon-state.json",
        stop=stop,
    )
    sys.exit(code)


@cli.command()
@click.argument("refs", nargs=-1, required=True, metavar="ID|URL...")
@common_options
@locked
def read(refs: tuple[str, ...]) -> None:
    """Mark items read, by id or saved URL: they leave "Still unread from earlier weeks"."""
    from digest.backlog import mark_read
    from digest.clock import utc_now
    from digest.store import open_store

    store = open_store(config().db_path)
    try:
        for line in mark_read(store, refs, utc_now()):
            click.echo(line)
    finally:
        store.close()


@cli.command()
@click.option("--week", required=True, metavar="YYYY-Www|last", help="The week to mail again.")
@common_options
@locked
def resend(week: str) -> None:
    """Mail the latest revision of a week's digest again, even if it was sent or unknown."""
    from digest.clock import utc_now
    from digest.jobs import resend as resend_digest

    cfg = config()
    outcome = resend_digest(cfg, _period(cfg, week, utc_now()))
    if outcome.failures:
        raise DeliveryError(outcome.failures[0])
    click.echo(f"mailed {outcome.period} revision {outcome.revision} to {', '.join(cfg.email.to)}")


@cli.command()
@click.option("--local", is_flag=True, help="Skip the LLM and SMTP servers (for health checks).")
@common_options
def doctor(local: bool) -> None:
    """Check the config, database, data folder, LLM endpoint and SMTP server; say what to fix."""
    from digest.doctor import run_checks

    healthy = True
    for check in run_checks(settings().config_path, local=local):
        click.echo(check.line())
        healthy = healthy and check.ok
    sys.exit(0 if healthy else 1)


@cli.command()
@click.option("--json", "as_json", is_flag=True, help="Machine-readable output.")
@common_options
def status(as_json: bool) -> None:
    """Sources and their health, items by state, failures, recent runs, LLM usage."""
    from digest.status import gather_status, render_status
    from digest.store import open_store

    store = open_store(config().db_path)
    try:
        data = gather_status(store)
    finally:
        store.close()
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
    from digest.export import write_export
    from digest.store import open_store

    cfg = config()
    period = _period(cfg, week, utc_now()) if week else None
    store = open_store(cfg.db_path)
    try:
        write_export(store, period, fmt, sys.stdout)
    finally:
        store.close()


def main() -> None:
    cli(prog_name="digest")
