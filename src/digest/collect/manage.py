"""`digest sources add|remove|pause|resume|rename`: the config's sources are changed in
the config file itself (tomlkit keeps its comments and layout), the others in the store.

A removed source keeps its row in the store, so its items keep their source; it is no
longer listed or polled. A renamed config source takes its store row (poll state, items)
along.

An edit of the config file is a transaction (`editing`): under a lock beside the file,
the file is read again and checked as a config, changed through tomlkit, read back as a
config, and written atomically with its mode and owner kept; a file its owner may not
write (no write permission) is refused, as editors refuse it. So twenty `sources add` at
once keep twenty sources, removing the last source leaves no `sources = []`, and a comment
stays with the table it stands above.
"""

from __future__ import annotations

import fcntl
import os
import re
import stat
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from datetime import datetime
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import tomlkit
from tomlkit.items import AoT, Array, Comment, Table, Whitespace
from tomlkit.toml_document import TOMLDocument

from digest.atomic import write_atomic
from digest.collect.feedlists import all_sources, feed_key
from digest.config import (
    RESERVED_SOURCE_NAMES,
    Config,
    SourceConfig,
    load_config,
    parse_config,
    web_url,
)
from digest.errors import ConfigError, SourceError
from digest.lifecycle import SourcePaused, SourceRemoved, SourceRenamed
from digest.store import Store
from digest.store.records import ManagedSource
from digest.userfiles import CONFIG_BYTES, UserFileError, read_small_text

CLI_ORIGIN = "cli"  # a feed `digest sources add` kept in the store: there was no config file
_HEADER = re.compile(r"^\s*\[")
_SOURCES_HEADER = re.compile(r"^\s*\[\[\s*sources\s*\]\]")
_SOURCES_PART = re.compile(r"^\s*\[\[?\s*sources\s*\.")  # [sources.auth]: the same source


@contextmanager
def editing(config: Config) -> Iterator[Config]:
    """The config as its file holds it now, under the lock of its edits (None path: as it
    is, for the store alone); ConfigError if the file may not be written."""
    if config.path is None:
        yield config
        return
    path = config.path.resolve()
    _check_writable(path)
    lock = path.with_name(f".{path.name}.lock")
    fd = os.open(lock, os.O_RDWR | os.O_CREAT | os.O_NOFOLLOW | os.O_CLOEXEC, 0o600)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)
        yield load_config(config.path)
    finally:
        os.close(fd)


def _check_writable(path: Path) -> None:
    """Refuse a config its owner made read-only, or one this user may not write."""
    try:
        mode = path.stat().st_mode
    except OSError as exc:
        raise ConfigError(f"config error: {path}: cannot edit: {exc.strerror or exc}") from exc
    if not mode & stat.S_IWUSR or not os.access(path, os.W_OK):
        raise ConfigError(
            f"config error: {path}: cannot edit: the file is read-only;"
            " make it writable (chmod u+w) or edit it by hand"
        )


def add_feed(
    config: Config, store: Store, url: str, *, name: str | None, category: str | None, now: datetime
) -> str:
    """Add a feed source: to the config file if there is one, else to the store."""
    try:
        url = web_url(url)
    except ValueError as exc:
        raise SourceError(f"cannot add {url!r}: {exc}") from exc
    listed = all_sources(store, config.sources)
    known = {feed_key(row["location"]): row["name"] for row in listed if row["kind"] == "feed"}
    if (same := known.get(feed_key(url))) is not None:
        raise SourceError(f"{url} is already a source: {same!r}")
    name = name or _free_name(_name_from(url), config, store)
    _check_free(name, config, store)
    if config.path is None:
        store.add_imported_feed(name, url, topic=category, origin=CLI_ORIGIN, now=now)
        return f"added feed {name!r} ({url}); no config file, so it is kept in the store"
    table = {"name": name, "kind": "feed", "url": url} | ({"topic": category} if category else {})
    _edit(config.path, _through_tomlkit(lambda doc: _append_source(doc, table)))
    return f"added feed {name!r} ({url}) to {config.path}"


def remove_source(config: Config, store: Store, name: str, now: datetime) -> str:
    """No longer listed or collected; its items stay."""
    declared, row = _find(config, store, name)
    items = next((listing.items for listing in store.list_sources() if listing.name == name), 0)
    if declared is not None:
        _edit(_file(config), lambda text: _delete_source(text, name))
    if row is not None:
        store.apply_source(SourceRemoved(row.id, now))
    where = f" from {config.path}" if declared is not None else ""
    return f"removed {name!r}{where}; its {items} items are kept"


def set_paused(config: Config, store: Store, name: str, paused: bool) -> str:
    """Pause (not collected until resumed) or resume a source."""
    declared, row = _find(config, store, name)
    if declared is not None:
        pause = _through_tomlkit(lambda doc: _set_key(_source_table(doc, name), "paused", paused))
        _edit(_file(config), pause)
    elif row is not None:
        store.apply_source(SourcePaused(row.id, paused))
    if paused:
        return f"paused {name!r}: not collected until `digest sources resume {name}`"
    return f"resumed {name!r}: collected again from the next run"


def rename_source(config: Config, store: Store, old: str, new: str) -> str:
    """A new name for a source; its items and poll state go with it."""
    declared, row = _find(config, store, old)
    _check_free(new, config, store)
    if declared is not None:
        rename = _through_tomlkit(lambda doc: _set_key(_source_table(doc, old), "name", new))
        _edit(_file(config), rename)
    if row is not None:
        store.apply_source(SourceRenamed(row.id, new))
    return f"renamed {old!r} to {new!r}"


# -- names -------------------------------------------------------------------------


def _find(
    config: Config, store: Store, name: str
) -> tuple[SourceConfig | None, ManagedSource | None]:
    """The source in the config and its row in the store; SourceError if in neither."""
    if name in RESERVED_SOURCE_NAMES:
        raise SourceError(
            f"{name!r} holds the links saved with `digest add` or `import`: not a source to change"
        )
    declared, row = _declared(config, name), store.managed_source(name)
    if declared is None and row is None:
        raise SourceError(f"no source named {name!r} (`digest sources list` names them)")
    return declared, row


def _declared(config: Config, name: str) -> SourceConfig | None:
    return next((source for source in config.sources if source.name == name), None)


def _check_free(name: str, config: Config, store: Store) -> None:
    if not name.strip():
        raise SourceError("a source needs a name")
    if name in RESERVED_SOURCE_NAMES:
        raise SourceError(f"{name!r} is reserved for links saved with `digest add` or `import`")
    if _declared(config, name) is not None or store.source_name_taken(name):
        raise SourceError(f"a source named {name!r} exists (or existed: its items keep it)")


def _free_name(base: str, config: Config, store: Store) -> str:
    candidate, number = base, 1
    while (
        candidate in RESERVED_SOURCE_NAMES
        or _declared(config, candidate)
        or (store.source_name_taken(candidate))
    ):
        number += 1
        candidate = f"{base} ({number})"
    return candidate


def _name_from(url: str) -> str:
    return (urlsplit(url).hostname or url).removeprefix("www.")


def _file(config: Config) -> Path:
    assert config.path is not None, "a declared source comes from a config file"
    return config.path


# -- the config file -------------------------------------------------------------------


def _edit(path: Path, change: Callable[[str], str]) -> None:
    """Change the config file's text (its comments kept) if the result still loads; the
    caller holds `editing`."""
    path = path.resolve()  # a symlinked config stays a symlink
    try:
        before = path.stat()
        text = change(read_small_text(path, "a config", CONFIG_BYTES))
    except (OSError, UserFileError, tomlkit.exceptions.ParseError) as exc:
        raise ConfigError(f"config error: {path}: cannot edit: {exc}") from exc
    parse_config(text, path)  # ConfigError, with the file and line, if it no longer loads
    try:
        write_atomic(path, text)
        if (before.st_uid, before.st_gid) != (path.stat().st_uid, path.stat().st_gid):
            os.chown(path, before.st_uid, before.st_gid)  # root edited a user's file
    except OSError as exc:
        raise ConfigError(f"config error: {path}: cannot write: {exc.strerror or exc}") from exc


def _through_tomlkit(change: Callable[[TOMLDocument], None]) -> Callable[[str], str]:
    def edit(text: str) -> str:
        document = tomlkit.parse(text)
        change(document)
        return tomlkit.dumps(document)

    return edit


def _sources(document: TOMLDocument) -> Sequence[Any]:
    sources = document.get("sources")
    return sources if isinstance(sources, list) else []


def _source_table(document: TOMLDocument, name: str) -> Any:
    for table in _sources(document):
        if table.get("name") == name:
            return table
    raise SourceError(f"no [[sources]] named {name!r} in the config file")


def _append_source(document: TOMLDocument, values: dict[str, str]) -> None:
    sources = document.get("sources")
    if isinstance(sources, AoT) and len(sources):
        table = tomlkit.table()
        table.update(values)
        # the comments that end the last source stand above what follows: after the new one
        table.value.body.extend([(None, tomlkit.ws("\n")), *_trailing(sources[-1].value.body)])
        sources.append(table)
        return
    if isinstance(sources, Array) and len(sources):  # sources = [{ ... }]
        sources.append(tomlkit.inline_table() | values)
        return
    if sources is not None:  # sources = []
        del document["sources"]
    table = tomlkit.table()
    table.update(values)
    table.add(tomlkit.nl())
    if not document.as_string().endswith("\n\n"):
        document.add(tomlkit.nl())
    document.append("sources", tomlkit.aot())
    document["sources"].append(table)


def _trailing(body: list[tuple[Any, Any]]) -> list[tuple[Any, Any]]:
    """Take the comments that end a table's body (from the first after its last key)."""
    keep = len(body)
    while (
        keep and body[keep - 1][0] is None and isinstance(body[keep - 1][1], Comment | Whitespace)
    ):
        keep -= 1
    while keep < len(body) and not isinstance(body[keep][1], Comment):
        keep += 1  # the blank lines after the keys stay
    taken = body[keep:]
    del body[keep:]
    return taken


def _delete_source(text: str, name: str) -> str:
    """The text without the [[sources]] table named `name` and the comment lines right
    above it; the comments that end it (about what follows) are kept."""
    document = tomlkit.parse(text)
    sources = document.get("sources")
    index = _sources(document).index(_source_table(document, name))
    if not isinstance(sources, AoT):  # sources = [{ ... }]: no comments between tables
        del sources[index]  # type: ignore[union-attr]
        return tomlkit.dumps(document)
    lines = text.splitlines(keepends=True)
    headers = [n for n, line in enumerate(lines) if _SOURCES_HEADER.match(line)]
    start = headers[index]
    end = next(
        (
            n
            for n in range(start + 1, len(lines))
            if _HEADER.match(lines[n]) and not _SOURCES_PART.match(lines[n])
        ),
        len(lines),
    )
    while end > start + 1 and _is_comment_or_blank(lines[end - 1]):
        end -= 1  # the comments that end the table stand above what follows: kept
    while start > 0 and lines[start - 1].lstrip().startswith("#"):
        start -= 1  # the comments right above the table are its own
    return "".join(lines[:start] + lines[end:])


def _is_comment_or_blank(line: str) -> bool:
    return not line.strip() or line.lstrip().startswith("#")


def _set_key(table: Any, key: str, value: object) -> None:
    """`key = value` in the table: in place if it is there, else after its last key (not
    after the comments that end it, which are about what follows). False removes it."""
    if value is False:
        table.pop(key, None)
    elif key in table or not isinstance(table, Table):
        table[key] = value
    else:
        keys = [k.key for k, _ in table.value.body if k is not None]
        # tomlkit's public API appends after the table's trailing comments, which belong
        # to what follows; its container inserts after a key (tested: test_sources_manage)
        table.value._insert_after(keys[-1], key, value)
