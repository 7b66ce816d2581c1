"""The commands that run the pipeline: `now`, its stages one by one, the daemon, `resend`, `site`."""

from __future__ import annotations

import logging
import sys
from collections.abc import Sequence
from pathlib import Path

import click

from digest.cli.base import (
    EXIT_WRITTEN_NOT_DELIVERED,
    RETRY,
    WEEK,
    cli,
    common_options,
    config,
    locked,
    print_reports,
    week_period,
)
from digest.errors import DeliveryError, DigestError
from digest.models import Stage
from digest.text import for_terminal


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
    period = week_period(cfg, week, utc_now())
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
    if (result.path is not None and result.needs_attention) or result.left_behind:
        sys.exit(EXIT_WRITTEN_NOT_DELIVERED)


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
@click.option(
    "--sample",
    is_flag=True,
    help="This week from a sample of saves written by us, in <data>/sample (offline, no key).",
)
@RETRY
@common_options
@locked
def now(
    week: str | None, dry_run: bool, since: str | None, every_week: bool, retry: bool, sample: bool
) -> None:
    """Collect, fetch, note, compose and deliver the digest of one week; print its path last.

    With --since or --all, write every week that has items, one line each; past weeks are
    not mailed. With --sample, see what a week looks like before saving anything."""
    if sample:
        if week or dry_run or since or every_week or retry:
            raise click.UsageError("--sample goes alone")
        _sample()
        return
    if since or every_week:
        if week or dry_run:
            raise click.UsageError("--since/--all cannot go with --week or --dry-run")
        _backfill(since, retry)
        return
    if dry_run:
        from digest.clock import utc_now
        from digest.pipeline import estimate_run

        cfg = config()
        for line in estimate_run(cfg, week_period(cfg, week, utc_now())).lines():
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


def _sample() -> None:
    from digest.clock import utc_now
    from digest.commands.sample import run_sample

    cfg = config()
    result = run_sample(cfg, utc_now())
    print_reports([report for report in result.reports if report.failures])
    click.echo(
        "digest: the sample week (saves written by us, in"
        f" {cfg.data_dir / 'sample' / 'inbox'}); your own saves go in a file source's folder"
        " (`digest config path` shows the config), then run `digest now`",
        err=True,
    )
    if result.path is not None:
        click.echo(str(result.path))


def _backfill(since: str | None, retry: bool) -> None:
    from digest.clock import utc_now
    from digest.pipeline import backfill
    from digest.runtime.progress import stage_progress

    cfg = config()
    start = None
    if since:
        try:
            start = week_period(cfg, since, utc_now())
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
        period = week_period(cfg, week, utc_now())
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


@cli.command()
@common_options
def daemon() -> None:
    """Run the [schedule] until SIGINT/SIGTERM: collect often, deliver the digest weekly."""
    import threading

    from digest.daemon import run_daemon
    from digest.fetch.access import config_secrets
    from digest.jobs import daemon_jobs
    from digest.runtime.logs import configure_logging

    cfg = config()
    configure_logging(logging.INFO, cfg.log, config_secrets(cfg))
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
    outcome = resend_digest(cfg, week_period(cfg, week, utc_now()), to=to)
    if outcome.failures and "email" not in outcome.delivered:
        raise DeliveryError(outcome.failures[0])
    click.echo(
        f"mailed {outcome.period} revision {outcome.revision} to {', '.join(to or cfg.email.to)}"
    )
    if outcome.failures:  # some recipients refused it
        click.echo(for_terminal(f"digest: {outcome.failures[0]}"), err=True)
        sys.exit(EXIT_WRITTEN_NOT_DELIVERED)


@cli.command()
@click.option(
    "--out",
    type=click.Path(file_okay=False, path_type=Path),
    help="The site's folder (default: [site] out, else <data_dir>/site).",
)
@common_options
def site(out: Path | None) -> None:
    """Write the archive site: every week, a page per section, full-text search; only the
    weeks that changed are written again. Serve the folder from any static host."""
    from digest.deliver.channels.site import week_links
    from digest.deliver.site import build_site
    from digest.store import open_store

    cfg = config()
    folder = out or cfg.site_dir
    with open_store(cfg.db_path) as store:
        try:
            build = build_site(folder, cfg.digests_dir, cfg.digest.zone, week_links(store, cfg))
        except OSError as exc:
            raise DigestError(f"site: cannot write in {folder}: {exc.strerror or exc}") from exc
    click.echo(for_terminal(f"site in {folder}: {len(build.written)} pages written"))
    if build.problem:
        click.echo(for_terminal(f"digest: {build.problem}"), err=True)
        sys.exit(EXIT_WRITTEN_NOT_DELIVERED)
