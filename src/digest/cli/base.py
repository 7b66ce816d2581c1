"""What every command shares: the options, the group, the config, errors met in one line,
the run lock, the stage reports."""

from __future__ import annotations

import functools
import logging
import traceback
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeVar

import click

from digest.errors import DISK_ERRNOS, DigestError, disk_error
from digest.models import Period, StageReport
from digest.text import for_terminal
from digest.urls import for_display

if TYPE_CHECKING:  # config pulls in pydantic: imported when a command needs it
    from digest.config import Config, ConfigLocation

F = TypeVar("F", bound=Callable[..., Any])


EXIT_WRITTEN_NOT_DELIVERED = 3  # the digest was written; a delivery or the model failed


@dataclass
class Settings:
    config_path: Path | None = None
    debug: bool = False
    verbose: bool = False
    loaded: Config | None = None  # loaded once per command


def _set_config(ctx: click.Context, _param: click.Parameter, value: Path | None) -> None:
    if value is not None:
        ctx.ensure_object(Settings).config_path = value


def _set_debug(ctx: click.Context, _param: click.Parameter, value: bool) -> None:
    if value:
        ctx.ensure_object(Settings).debug = True


def _set_verbose(ctx: click.Context, _param: click.Parameter, value: bool) -> None:
    if value:
        ctx.ensure_object(Settings).verbose = True


def common_options(command: F) -> F:
    """--config, --verbose and --debug, accepted before or after the subcommand."""
    command = click.option(
        "--config",
        type=click.Path(path_type=Path, dir_okay=False),
        expose_value=False,
        callback=_set_config,
        help="Config file. Default: $DIGEST_CONFIG, else ./config/digest.toml, else"
        " $XDG_CONFIG_HOME/digest/digest.toml (~/.config/digest/digest.toml), else built-in"
        " defaults with the data in $XDG_DATA_HOME/digest (~/.local/share/digest).",
    )(command)
    command = click.option(
        "--verbose",
        is_flag=True,
        expose_value=False,
        callback=_set_verbose,
        help="Say first which config and data folder are in use.",
    )(command)
    return click.option(
        "--debug", is_flag=True, expose_value=False, callback=_set_debug, help="Show tracebacks."
    )(command)


class DigestGroup(click.Group):
    def invoke(self, ctx: click.Context) -> Any:
        try:
            return super().invoke(ctx)
        except OSError as exc:  # a write no layer below expected to fail: the disk
            if exc.errno not in DISK_ERRNOS:
                raise
            _fail(ctx, disk_error(exc, exc.filename or "to the disk"))
        except DigestError as exc:
            _fail(ctx, exc)


def _fail(ctx: click.Context, error: DigestError) -> None:
    """The error's lines on stderr (a traceback too with --debug) and exit code 1."""
    if ctx.ensure_object(Settings).debug:
        click.echo(for_display(traceback.format_exc()), err=True, nl=False)
    for line in str(error).splitlines():
        click.echo(for_terminal(f"digest: {line}"), err=True)
    ctx.exit(1)


def settings() -> Settings:
    return click.get_current_context().ensure_object(Settings)


def config() -> Config:
    """The config in use, loaded once; under --verbose, say which and where the data goes."""
    from digest.config import load_config, locate_config

    current = settings()
    if current.loaded is None:
        current.loaded = load_config(current.config_path)
        if current.verbose:
            location = locate_config(current.config_path)
            click.echo(f"digest: {_describe_location(location, current.loaded)}", err=True)
    return current.loaded


def _describe_location(location: ConfigLocation, cfg: Config) -> str:
    if location.path is None:
        return f"config: none (built-in defaults); data: {cfg.data_dir}"
    return f"config: {location.path} ({location.found_by}); data: {cfg.data_dir}"


def _print_version(ctx: click.Context, _param: click.Parameter, value: bool) -> None:
    if value and not ctx.resilient_parsing:
        from digest import __version__

        click.echo(f"digest, version {__version__}")
        ctx.exit()


def _setup_logging(level: int) -> None:
    from digest.runtime.logs import configure_logging

    configure_logging(level)


@click.group(cls=DigestGroup)
@click.option(
    "--version",
    is_flag=True,
    expose_value=False,
    is_eager=True,
    callback=_print_version,
    help="Show the version and exit.",
)
@common_options
def cli() -> None:
    """Turn what you saved this week into a weekly digest you actually read.

    \b
    Exit codes:
      0  done (per-item and per-source failures are reported, not fatal)
      1  the job could not run (bad config, unreadable file, database locked)
      2  wrong usage
      3  the digest was written, but a configured delivery (mail, log, feed)
         failed or the model was unreachable for notes
    """
    _setup_logging(logging.WARNING)


SCREENFUL = 20  # lines of news, and of failures, shown per stage; the rest are counted


def print_reports(reports: Sequence[StageReport]) -> None:
    """One line per stage, then one line per news and per failure (a screenful of each at
    most), on stderr."""
    for report in reports:
        click.echo(f"{report.name}: {report.counts}", err=True)
        for lines, mark in ((report.info, "  "), (report.failures, "  ! ")):
            for line in lines[:SCREENFUL]:
                click.echo(for_terminal(f"{mark}{line}"), err=True)
            if len(lines) > SCREENFUL:
                more = len(lines) - SCREENFUL
                click.echo(f"{mark}… and {more:,} more, see `digest status`", err=True)


def locked(command: Callable[..., None]) -> Callable[..., None]:
    """Run the command under the run lock shared with `digest now` and the daemon."""

    @functools.wraps(command)
    def wrapper(*args: Any, wait: bool = False, **kwargs: Any) -> None:
        from digest.runtime.lock import run_lock

        with run_lock(config().data_dir, wait=wait):
            command(*args, **kwargs)

    return click.option("--wait", is_flag=True, help="Wait for another run to finish.")(wrapper)


def week_period(cfg: Config, week: str | None, now: datetime) -> Period:
    from digest.pipeline import resolve_period

    try:
        return resolve_period(cfg, week, now)
    except ValueError as exc:
        raise click.BadParameter(str(exc), param_hint="--week") from exc


RETRY = click.option(
    "--retry",
    is_flag=True,
    help="Retry what failed now, not after its backoff: fetches (and, with `now`, notes"
    " whose attempts ran out).",
)


WEEK = click.option(
    "--week", metavar="YYYY-Www|last", help="ISO week, or 'last' (default: the current one)."
)
