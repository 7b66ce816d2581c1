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
from digest.errors import DigestError
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
    logging.basicConfig(
        level=level, format="%(asctime)s %(levelname)s %(message)s", stream=sys.stderr
    )


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
    from digest.pipeline import run, utc_now

    cfg = config()
    period = _period(cfg, week, utc_now())
    result = run(cfg, command, period=period, stages=stages)
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
@common_options
@locked
def now(week: str | None) -> None:
    """Collect, fetch, note, compose and deliver the digest of one week; print its path last."""
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
@click.argument("files", nargs=-1, required=True, type=click.Path(path_type=Path, dir_okay=False))
@click.option("--format", "forced_format", help="Force a format instead of detecting it.")
@common_options
@locked
def import_(files: tuple[Path, ...], forced_format: str | None) -> None:
    """Import saved links and posts from files (format detected from content)."""
    from digest.collect.files import describe, import_files
    from digest.pipeline import utc_now
    from digest.store import open_store

    cfg = config()
    store = open_store(cfg.db_path)
    try:
        reports = import_files(
            store, list(files), zone=cfg.digest.zone, now=utc_now(), forced_format=forced_format
        )
    finally:
        store.close()
    for report in reports:
        for line in describe(report):
            click.echo(line)


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
    from digest.collect.files import add_url
    from digest.pipeline import utc_now
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
    from digest.daemon import run_daemon
    from digest.pipeline import daemon_jobs

    _setup_logging(logging.INFO)
    logging.getLogger().setLevel(logging.INFO)
    logging.getLogger("apscheduler").setLevel(logging.WARNING)  # its INFO lines repeat ours
    cfg = config()
    code = run_daemon(
        cfg.schedule,
        daemon_jobs(cfg),
        zone=cfg.digest.zone,
        lock_dir=cfg.data_dir,
        state_path=cfg.data_dir / "daemon-state.json",
    )
    sys.exit(code)


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
@WEEK
@click.option(
    "--format", "fmt", type=click.Choice(["jsonl", "csv"]), default="jsonl", show_default=True
)
@common_options
def export(week: str | None, fmt: str) -> None:
    """Every item of the period (default: all) with its text, note and state."""
    from digest.export import write_export
    from digest.pipeline import utc_now
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
