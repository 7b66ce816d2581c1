"""The checks that need no network: the data folder, the database (read-only), the
sources' files and URLs, the prompt files, the audio voice, secrets readable by others."""

from __future__ import annotations

import os
import stat
from collections.abc import Iterator
from urllib.parse import urlsplit

from digest.audio.voices import NoVoice, voice_for
from digest.collect.stage import without_sources
from digest.commands.doctor.check import Check, Problem
from digest.config import MAIL_KINDS, NO_SOURCES, NO_SOURCES_FIX, Config, SourceConfig
from digest.errors import DigestError
from digest.notes.prompts import PROMPT_FILE_KEYS, PromptProblem, check_prompt_file
from digest.store import open_store_read_only, schema_differences
from digest.urls import holds_secret


def secrets_exposed(config: Config) -> Iterator[Check]:
    """A problem for the config file, and the database that keeps its feeds' URLs, when
    a source URL holds a password or token and others may read the file."""
    holding = [s.name for s in config.sources if s.url and holds_secret(s.url)]
    if not holding:
        return
    for name, path in (("config secrets", config.path), ("database secrets", config.db_path)):
        mode = path.stat().st_mode if path is not None and path.exists() else 0
        if mode & (stat.S_IRGRP | stat.S_IROTH):
            yield Check(
                name,
                False,
                f"{path} is readable by others (mode {stat.S_IMODE(mode):o}) and holds a"
                f" password or token (source {holding[0]!r})",
                f"chmod 600 {path}",
            )


def check_data_dir(config: Config) -> str:
    """Writable, or creatable by the first run; asked of the kernel, nothing written."""
    folder = config.data_dir
    existing = next(p for p in (folder, *folder.parents) if p.exists())
    if not existing.is_dir():
        raise Problem(f"{existing} is a file, not a folder", "move it aside or set data_dir")
    if not os.access(existing, os.W_OK | os.X_OK):
        raise Problem(
            f"{existing} is not writable",
            f"create {folder} and give the user running digest (uid {os.getuid()}) write access",
        )
    return str(folder) if existing == folder else f"{folder}, created by the first run"


def check_database(config: Config) -> str:
    path = config.db_path
    if not path.exists():
        return f"{path} not created yet; the first run creates it"
    try:
        store = open_store_read_only(path)
    except DigestError as exc:
        raise Problem(str(exc), "check the file's permissions, or move it aside") from exc
    with store:
        try:
            problems = store.integrity_problems()
            pending, unknown = schema_differences(store)
            items = store.count_items() if not pending else None
        except DigestError as exc:
            raise Problem(str(exc), "restore the database from a backup, or move it aside") from exc
    if problems:
        raise Problem(
            f"{path} fails integrity_check: {problems[0]}",
            "restore it from a backup, or `sqlite3 digest.db .recover` into a new file",
        )
    if unknown:
        raise Problem(
            f"{path} was used by a newer digest (schema step {unknown[-1]})",
            "upgrade digest, or restore a backup made before the upgrade",
        )
    if pending:
        return f"{path}, {len(pending)} schema steps to apply on the next run"
    return f"{path}, schema up to date, {items} items"


def feed_sources(config: Config) -> list[SourceConfig]:
    """The config's feeds and, when the database can be read, the feeds imported into it."""
    feeds = [source for source in config.sources if source.kind == "feed"]
    if not config.db_path.exists():
        return feeds
    from digest.collect.feedlists import imported_feed_sources

    try:
        with open_store_read_only(config.db_path) as store:
            return feeds + [source for _, source in imported_feed_sources(store, config.sources)]
    except DigestError:
        return feeds  # the database check has said why


def check_sources(config: Config, feeds: list[SourceConfig]) -> Iterator[Check]:
    """A line per file source that cannot be read and per feed URL that does not parse."""
    problems = [
        *(
            _file_source_problem(source)
            for source in config.sources
            if source.kind in ("file", "maildir", "mbox")
        ),
        *(feed_url_problem(source) for source in feeds),
    ]
    yield from filter(None, problems)
    if _fresh(config):
        yield Check("sources", True, f"{NO_SOURCES}, nothing to collect", NO_SOURCES_FIX, True)
    elif not any(problems):
        files = sum(source.kind == "file" for source in config.sources)
        mail = sum(source.kind in MAIL_KINDS for source in config.sources)
        mailboxes = f", mailboxes: {mail}" if mail else ""
        yield Check("sources", True, f"feeds: {len(feeds)}, file sources: {files}{mailboxes}")


def _fresh(config: Config) -> bool:
    """No source in the config or the database (read-only), nothing saved: what the first
    `digest now` would say (collect.without_sources). A database that cannot be read is
    the database check's to report."""
    if config.sources or not config.db_path.exists():
        return not config.sources
    try:
        with open_store_read_only(config.db_path) as store:
            return without_sources(config, store)
    except DigestError:
        return False


def _file_source_problem(source: SourceConfig) -> Check | None:
    path = source.path
    assert path is not None  # the config requires it for a file source
    name = f"source {source.name!r}"
    if not path.exists():
        return Check(name, False, f"{path} does not exist", "create it, or correct its path")
    wanted = os.R_OK | (os.X_OK if path.is_dir() else 0)
    if not os.access(path, wanted):
        return Check(name, False, f"{path} is not readable", f"give uid {os.getuid()} read access")
    return None


def feed_url_problem(source: SourceConfig) -> Check | None:
    url = source.url or ""
    try:
        parts = urlsplit(url.strip())
        parts.port  # noqa: B018  (raises ValueError on a malformed port)
    except ValueError as exc:
        reason = str(exc)
    else:
        reason = "" if parts.scheme in ("http", "https") else "not an http(s) URL"
        reason = reason or ("" if parts.hostname else "no host name")
    if not reason:
        return None
    return Check(f"source {source.name!r}", False, f"{url!r}: {reason}", "correct its url")


def check_prompt_files(config: Config) -> Iterator[Check]:
    """Each prompt file of [llm]: one that does not parse or uses a variable it is not
    given is a problem (a run uses the built-in prompt instead, and exits 3)."""
    for key in PROMPT_FILE_KEYS:
        try:
            check_prompt_file(config.llm, key)
        except PromptProblem as problem:
            fix = "correct the file at the line named; `digest prompts export DIR` writes working ones"
            yield Check(f"llm.{key}", False, str(problem), fix)
        else:
            if (path := getattr(config.llm, key)) is not None:
                yield Check(f"llm.{key}", True, str(path))


def check_audio(config: Config) -> str:
    """A voice that can speak the audio edition (a Piper model is loaded, nothing spoken)."""
    try:
        return f"{voice_for(config.audio).name} speaks the audio edition"
    except NoVoice as exc:
        raise Problem(
            str(exc).removeprefix("audio: "),
            "apt-get install espeak-ng, or set [audio] voice to a Piper voice model",
        ) from exc
