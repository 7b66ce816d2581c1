"""The commands that set digest up: `init`, `config path`, `doctor`, the starter files."""

from __future__ import annotations

import contextlib
import sys
from pathlib import Path

import click

from digest.cli.base import (
    cli,
    common_options,
    config,
    settings,
)
from digest.errors import ConfigError, DigestError


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
