"""`digest doctor`: is this installation able to run? One line per check, with the fix.

Checks the config, then what needs no network (local.py: the data folder, the database,
the sources, the prompt files, the voice of the audio edition when it is enabled;
templates.py: your templates, rendering a sample week), then what reaches out
(network.py: DNS for every feed host and one feed, a login to each IMAP source, the LLM
endpoint and the SMTP server), each with our own timeouts. It writes
nothing: the data folder is checked with access(2), the database is opened read-only
(never created or migrated), no mail is sent. The config comes first: without it nothing
else can be checked.
"""

from __future__ import annotations

import socket
from collections.abc import Iterator
from pathlib import Path

from digest.commands.doctor.check import Check, checked
from digest.commands.doctor.local import (
    check_audio,
    check_data_dir,
    check_database,
    check_prompt_files,
    check_sources,
    feed_sources,
    secrets_exposed,
)
from digest.commands.doctor.network import (
    Resolver,
    check_llm,
    check_mailboxes,
    check_network,
    check_smtp,
)
from digest.commands.doctor.templates import check_templates
from digest.config import load_config, user_config_path
from digest.errors import DigestError


def run_checks(
    config_path: Path | None, *, local: bool = False, resolve: Resolver = socket.getaddrinfo
) -> Iterator[Check]:
    """Each check as it finishes; a config that does not load ends the list.

    `local` leaves out the network, the LLM and SMTP servers: a health check that runs
    every few minutes must not spend tokens or open mail sessions.
    """
    try:
        config = load_config(config_path)
    except DigestError as exc:
        yield Check("config", False, str(exc), "correct the file at the place named")
        return
    yield Check("config", True, str(config.path) if config.path else _no_config_file())
    yield from secrets_exposed(config)
    yield checked("data dir", check_data_dir, config)
    yield checked("database", check_database, config)
    feeds = feed_sources(config)
    yield from check_sources(config, feeds)
    yield from check_prompt_files(config)
    yield from check_templates(config)
    if config.audio.enabled:
        yield checked("audio", check_audio, config)
    if local:
        return
    yield from check_network(config, feeds, resolve)
    yield from check_mailboxes(config)
    yield checked("llm", check_llm, config)
    yield checked("smtp", check_smtp, config)


def _no_config_file() -> str:
    return f"no config file, built-in defaults; `digest init` writes {user_config_path()}"
