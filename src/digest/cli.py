"""Thin click commands: parse, call one function, print. Errors meet the user only here."""

from __future__ import annotations

import contextlib
import functools
import logging
import sys
import traceback
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from datetime import date, datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeVar

import click

from digest.errors import DISK_ERRNOS, ConfigError, DeliveryError, DigestError, disk_error
from digest.models import ItemKind, ItemState, Period, Stage, StageReport
from digest.urls import for_display

if TYPE_CHECKING:  # config pulls in pydantic: imported when a command needs it
    from digest.config import Config, ConfigLocation
    from digest.store import Store

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
        click.echo(for_display(f"digest: {line}"), err=True)
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
    where = f"{location.path} ({location.found_by})" if location.path else location.found_by
    return f"config {where}; data {cfg.data_dir}"


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
        click.echo(f"{report.name}: {report.done} done, {report.failed} failed", err=True)
        for lines, mark in ((report.info, "  "), (report.failures, "  ! ")):
            for line in lines[:SCREENFUL]:
                click.echo(for_display(f"{mark}{line}"), err=True)
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


def _run_stages(
    command: str,
    stages: Sequence[Stage],
    week: str | None,
    *,
    only_period: bool = False,
    retry_fetch: bool = False,
    retry_notes: bool = False,
    refresh: bool = False,
) -> None:
    from digest.clock import utc_now
    from digest.notes.stage import NotesScope
    from digest.pipeline import run
    from digest.runtime.progress import stage_progress

    cfg = config()
    period = _period(cfg, week, utc_now())
    notes = NotesScope(only_period=only_period, retry=retry_notes, refresh=refresh)
    with stage_progress() as progress:
        result = run(
            cfg,
            command,
            period=period,
            stages=stages,
            progress=progress,
            notes=notes,
            retry_fetch=retry_fetch,
        )
    print_reports(result.reports)
    if result.path is not None:
        click.echo(str(result.path))
    if result.path is not None and result.needs_attention:
        sys.exit(EXIT_WRITTEN_NOT_DELIVERED)


def _period(cfg: Config, week: str | None, now: datetime) -> Period:
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


@cli.command()
@WEEK
@click.option(
    "--dry-run",
    is_flag=True,
    help="Only estimate the LLM calls, tokens and cost of the run, from what is in the store"
    " now: nothing is collected, fetched, sent to the LLM, written or delivered.",
)
@click.option(
    "--since", metavar="YYYY-Www", help="Every week with items from this one to now (backfill)."
)
@click.option("--all", "every_week", is_flag=True, help="Every week that has items (backfill).")
@RETRY
@common_options
@locked
def now(week: str | None, dry_run: bool, since: str | None, every_week: bool, retry: bool) -> None:
    """Collect, fetch, note, compose and deliver the digest of one week; print its path last.

    With --since or --all, write every week that has items, one line each; past weeks are
    not mailed."""
    if since or every_week:
        if week or dry_run:
            raise click.UsageError("--since/--all cannot go with --week or --dry-run")
        _backfill(since, retry)
        return
    if dry_run:
        from digest.clock import utc_now
        from digest.pipeline import estimate_run

        cfg = config()
        for line in estimate_run(cfg, _period(cfg, week, utc_now())).lines():
            click.echo(line)
        return
    _run_stages(
        "now",
        (Stage.COLLECT, Stage.FETCH, Stage.NOTES, Stage.DELIVER),
        week,
        only_period=True,
        retry_fetch=retry,
        retry_notes=retry,
    )


def _backfill(since: str | None, retry: bool) -> None:
    from digest.clock import utc_now
    from digest.pipeline import backfill
    from digest.runtime.progress import stage_progress

    cfg = config()
    start = None
    if since:
        try:
            start = _period(cfg, since, utc_now())
        except click.BadParameter as exc:
            raise click.BadParameter(exc.message, param_hint="--since") from exc
    with stage_progress() as progress:
        gathered, weeks = backfill(cfg, start, progress=progress, retry=retry)
    print_reports(gathered.reports)
    for week, result in weeks:  # stdout: each digest's path, the last week's last (a script's)
        print_reports([r for r in result.reports if r.failures])
        things = "item" if week.items == 1 else "items"
        click.echo(f"{week.period.label}: {week.items} {things}", err=True)
        if result.path is not None:
            click.echo(str(result.path))
    if not weeks:
        click.echo("no week has items" + (f" since {since}" if since else ""), err=True)
    if any(result.path is not None and result.needs_attention for _, result in weeks):
        sys.exit(EXIT_WRITTEN_NOT_DELIVERED)


@cli.command()
@common_options
@locked
def collect() -> None:
    """Collect every source (feeds and files) into the store."""
    _run_stages("collect", (Stage.COLLECT,), None)


@cli.command()
@RETRY
@common_options
@locked
def extract(retry: bool) -> None:
    """Fetch and extract the text of items that are due."""
    _run_stages("extract", (Stage.FETCH,), None, retry_fetch=retry)


@cli.command()
@click.option(
    "--retry",
    is_flag=True,
    help="Ask the model again for items whose note attempts ran out (llm.max_attempts).",
)
@WEEK
@click.option(
    "--refresh",
    is_flag=True,
    help="With --week: renew that week's notes made with another prompt (llm.prompt_file)"
    " or model; a prompt change otherwise applies to new notes only.",
)
@click.option(
    "--dry-run", is_flag=True, help="Only estimate the calls, tokens and cost; nothing is sent."
)
@common_options
@locked
def summarize(retry: bool, week: str | None, refresh: bool, dry_run: bool) -> None:
    """Write notes for items that have none, or whose text changed (with --week: that
    week's items only)."""
    if refresh and week is None:
        raise click.UsageError("--refresh renews one week's notes: give --week")
    if dry_run:
        from digest.clock import utc_now
        from digest.pipeline import estimate_run

        cfg = config()
        period = _period(cfg, week, utc_now())
        for line in estimate_run(
            cfg, period, only_period=week is not None, refresh=refresh
        ).lines():
            click.echo(line)
        return
    _run_stages(
        "summarize",
        (Stage.NOTES,),
        week,
        only_period=week is not None,
        retry_notes=retry,
        refresh=refresh,
    )


@cli.command()
@WEEK
@common_options
@locked
def compose(week: str | None) -> None:
    """Compose and deliver the digest of one week from the notes in the store."""
    _run_stages("compose", (Stage.DELIVER,), week)


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
    from digest.collect.files import Unimported, describe, import_files
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
            click.echo(for_display(f"digest: {line}" if is_failure else line), err=is_failure)
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
    table = [columns, *(tuple(for_display(str(row[c])) for c in columns) for row in rows)]
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
    from digest.store import open_store

    cfg = config()
    with open_store(cfg.db_path) as store:
        click.echo(for_display(change(cfg, store)))


@cli.group()
@common_options
def prompts() -> None:
    """Your own prompts: [llm] prompt_file and summary_prompt_file."""


@prompts.command("export")
@click.argument("folder", type=click.Path(path_type=Path, file_okay=False))
@common_options
def prompts_export(folder: Path) -> None:
    """Write the built-in prompts into FOLDER as Jinja templates to start from (note.md.j2
    for [llm] prompt_file, week.md.j2 for summary_prompt_file); existing files are kept."""
    from digest.commands.starters import export_starters
    from digest.notes.prompts import STARTERS

    for line in export_starters("digest.notes", "starters", STARTERS, folder):
        click.echo(line)


@cli.group()
@common_options
def templates() -> None:
    """Your own templates: [output] templates_dir."""


@templates.command("export")
@click.argument("folder", type=click.Path(path_type=Path, file_okay=False))
@common_options
def templates_export(folder: Path) -> None:
    """Write the built-in templates into FOLDER to start from: digest.md.j2 (the markdown
    digest) and mail.html.j2 (the email's HTML part), each listing the variables it gets;
    existing files are kept. Point [output] templates_dir at the folder."""
    from digest.commands.starters import export_starters
    from digest.compose.usertemplates import BUILT_IN

    for line in export_starters("digest.compose", "templates", BUILT_IN, folder):
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
    from digest.clock import utc_now
    from digest.collect.files import add_url
    from digest.store import open_store

    cfg = config()
    when = (
        saved_at.replace(tzinfo=cfg.digest.zone) if saved_at and not saved_at.tzinfo else saved_at
    )
    with open_store(cfg.db_path) as store:
        is_new = add_url(store, url, title=title, note=note, saved_at=when, now=utc_now())
    shown = for_display(url)
    click.echo(f"saved {shown}" if is_new else f"already saved: {shown}")


@cli.command()
@common_options
def daemon() -> None:
    """Run the [schedule] until SIGINT/SIGTERM: collect often, deliver the digest weekly."""
    import threading

    from digest.daemon import run_daemon
    from digest.jobs import daemon_jobs
    from digest.runtime.logs import config_secrets, configure_logging

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
    from digest.clock import utc_now
    from digest.compose.backlog import mark_read
    from digest.store import open_store

    with open_store(config().db_path) as store:
        for line in mark_read(store, refs, utc_now()):
            click.echo(for_display(line))


@cli.command()
@click.argument("query")
@click.option("--week", metavar="YYYY-Www|last", help="Only items saved in this ISO week.")
@click.option("--since", metavar="YYYY-MM-DD|YYYY-Www", help="Only items saved from then on.")
@click.option("--source", metavar="NAME", help="Only items from this source.")
@click.option("--kind", type=click.Choice([k.value for k in ItemKind]), help="Only this kind.")
@click.option("--state", type=click.Choice([s.value for s in ItemState]), help="Only this state.")
@click.option("--unread", is_flag=True, help="Only items not marked read.")
@click.option("--limit", type=click.IntRange(1), default=20, show_default=True)
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
    AND, OR, NOT, NEAR(a b), column:word (title, text, note, context, tags, host). Plain
    words with punctuation that FTS5 refuses (c++, vllm.ai) are searched as phrases."""
    from digest.clock import utc_now
    from digest.commands.search import as_phrases, show_hits, write_json
    from digest.errors import BadSearch
    from digest.store import SearchFilter, open_store

    cfg = config()
    if week and since:
        raise click.UsageError("--week and --since cannot go together")
    period = _period(cfg, week, utc_now()) if week else None
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
            hits = store.search(query, narrow, limit)
        except BadSearch as exc:
            if (phrases := as_phrases(query)) is None:
                hint = '(words with punctuation go in "double quotes")'
                click.echo(for_display(f"digest: {exc} {hint}"), err=True)
                sys.exit(2)
            click.echo(f"searched for {phrases} (plain words, not FTS5 syntax)", err=True)
            hits = store.search(phrases, narrow, limit)
    if as_json:
        write_json(hits, cfg.digest.zone, sys.stdout)
    else:
        from rich.console import Console

        show_hits(hits, cfg.digest.zone, Console(highlight=False))
    if not hits:
        click.echo(f"nothing found for {query!r}", err=True)


def _since(cfg: Config, since: str | None) -> datetime | None:
    if since is None:
        return None
    from digest.clock import utc_now
    from digest.periods import local_midnight

    try:
        return local_midnight(date.fromisoformat(since), cfg.digest.zone)
    except ValueError:
        try:
            return _period(cfg, since, utc_now()).start
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
@click.argument("ids", nargs=-1, required=True, type=int, metavar="ID...")
@click.option("--unstar", is_flag=True, help="Take the star off instead.")
@common_options
@locked
def star(ids: tuple[int, ...], unstar: bool) -> None:
    """Star items (by id, as `digest search` shows them): the ranking learns from them."""
    from digest.clock import utc_now
    from digest.store import open_store

    with open_store(config().db_path) as store:
        unknown = [i for i in ids if not store.star(i, utc_now(), starred=not unstar)]
    for item_id in ids:
        if item_id not in unknown:
            click.echo(f"{'unstarred' if unstar else 'starred'}: {item_id}")
    if unknown:
        raise DigestError(f"no saved item with id {', '.join(map(str, unknown))}")


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
    for line in rules_report(cfg, _period(cfg, week, utc_now())):
        click.echo(for_display(line))


@cli.command()
@click.option("--week", required=True, metavar="YYYY-Www|last", help="The week to mail again.")
@click.option(
    "--to",
    "to",
    multiple=True,
    metavar="ADDRESS",
    help="Mail only this recipient (repeat it), e.g. those refused last time.",
)
@common_options
@locked
def resend(week: str, to: tuple[str, ...]) -> None:
    """Mail the latest revision of a week's digest again, even if it was sent or unknown."""
    from digest.clock import utc_now
    from digest.jobs import resend as resend_digest

    cfg = config()
    outcome = resend_digest(cfg, _period(cfg, week, utc_now()), to=to)
    if outcome.failures and "email" not in outcome.delivered:
        raise DeliveryError(outcome.failures[0])
    click.echo(
        f"mailed {outcome.period} revision {outcome.revision} to {', '.join(to or cfg.email.to)}"
    )
    if outcome.failures:  # some recipients refused it
        click.echo(for_display(f"digest: {outcome.failures[0]}"), err=True)
        sys.exit(EXIT_WRITTEN_NOT_DELIVERED)


@cli.command()
@common_options
def init() -> None:
    """Write the commented default config to the user's config location (never overwriting)."""
    from digest.atomic import write_atomic
    from digest.config import default_config_text, locate_config, user_config_path, user_data_dir

    path = user_config_path()
    if path.exists():
        click.echo(f"{path} exists; left as it is (`digest config path` shows what is in use)")
        return
    in_use = locate_config(settings().config_path)
    inbox = user_data_dir() / "inbox"  # the config's file source: files dropped here are read
    try:
        write_atomic(path, default_config_text(user_data_dir()))
        inbox.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise ConfigError(f"cannot write {exc.filename or path}: {exc.strerror or exc}") from exc
    click.echo(f"wrote {path}: edit [[sources]], then `digest now`; drop files into {inbox}")
    if in_use.path is not None and in_use.path != path:
        click.echo(
            f"note: here digest reads {in_use.path} instead ({in_use.found_by}); run it from "
            f"another folder, or pass --config {path}",
            err=True,
        )


@cli.group("config")
@common_options
def config_group() -> None:
    """Where the config and the data are."""


@config_group.command("path")
@common_options
def config_path() -> None:
    """Print the config file in use (and how it was found) and the data folder."""
    from digest.config import locate_config

    location = locate_config(settings().config_path)
    cfg = config()
    click.echo(f"config: {location.path or '-'} ({location.found_by})")
    click.echo(f"data: {cfg.data_dir}")


@cli.command()
@click.option(
    "--local",
    is_flag=True,
    help="Leave out the network: DNS, the feed, the LLM and SMTP servers (for health checks).",
)
@common_options
def doctor(local: bool) -> None:
    """Check the config, data folder, database (read-only), sources, DNS and one feed, the LLM
    endpoint and the SMTP server; say what to fix. Writes nothing; exits 1 on a problem."""
    from digest.commands.doctor import run_checks

    if settings().verbose:
        with contextlib.suppress(DigestError):  # a config that does not load is the first check
            config()
    healthy = True
    for check in run_checks(settings().config_path, local=local):
        click.echo(check.line())
        healthy = healthy and check.ok
    sys.exit(0 if healthy else 1)


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
    from digest.commands.status import StatusQuery, gather_status, render_status
    from digest.store import open_store

    with open_store(config().db_path) as store:
        _known_source(store, source)
        data = gather_status(store, StatusQuery(list_all, failed_only, source))
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
    period = _period(cfg, week, utc_now()) if week else None
    with open_store(cfg.db_path) as store:
        write_export(store, period, fmt, sys.stdout)


def main() -> None:
    try:
        cli(prog_name="digest")
    except Exception:  # a bug: its traceback, as Python would print it, less any password
        sys.stderr.write(for_display(traceback.format_exc()))
        sys.exit(1)
