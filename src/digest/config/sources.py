"""[[sources]]: where saved things are collected from, and the secrets a private one needs."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Annotated, Literal

from pydantic import Field, field_validator, model_validator

from digest.config.values import Section, web_url

# the sources of `digest add` and `digest import`, which the config cannot name
MANUAL_SOURCE = "manual"
IMPORT_SOURCE = "import"
RESERVED_SOURCE_NAMES = frozenset({MANUAL_SOURCE, IMPORT_SOURCE})
# What to do on an installation with no source at all and nothing saved: said once by
# `digest doctor`, the collect stage (`digest now`) and the empty digest.
NO_SOURCES = "no sources yet"
NO_SOURCES_FIX = (
    "run `digest init` (a config with an inbox folder for your saves: journals, bookmark"
    " exports, pasted posts), or save a file with `digest import FILE` or a link with"
    " `digest add URL`"
)

_HEADER_NAME = re.compile(r"[!#$%&'*+.^_`|~0-9A-Za-z-]+")  # an HTTP token (RFC 9110)
_NOT_HEADER_VALUE = re.compile(r"[^\t\x20-\x7e]")  # sendable: visible ASCII, space and tab
_MANAGED_HEADERS = frozenset({"host", "content-length", "transfer-encoding", "connection"})


def _unsendable(char: str) -> str:
    """Why a header value cannot be sent as it is."""
    if char.isprintable():
        return (
            f"holds {char!r}, which HTTP headers cannot carry: only visible ASCII"
            " (percent-encode the rest, as the server expects it)"
        )
    return "holds a line break or control character"


class _Secret(Section):
    """A secret named by the config, kept in the environment or in a file, never in it."""

    def _one_place(self, env: str | None, file: Path | None, key: str) -> None:
        if (env is None) == (file is None):
            raise ValueError(f"give {key}_env (an environment variable) or {key}_file, one of them")


class BasicAuth(_Secret):
    type: Literal["basic"]
    username: str
    password_env: str | None = None
    password_file: Path | None = None

    @model_validator(mode="after")
    def _password_somewhere(self) -> BasicAuth:
        self._one_place(self.password_env, self.password_file, "password")
        return self


class BearerAuth(_Secret):
    type: Literal["bearer"]
    token_env: str | None = None
    token_file: Path | None = None

    @model_validator(mode="after")
    def _token_somewhere(self) -> BearerAuth:
        self._one_place(self.token_env, self.token_file, "token")
        return self


SourceAuth = Annotated[BasicAuth | BearerAuth, Field(discriminator="type")]


MAIL_KINDS = ("imap", "maildir", "mbox")


class SourceConfig(Section):
    name: str
    kind: Literal["feed", "file", "imap", "maildir", "mbox"]
    url: str | None = None
    path: Path | None = None
    format: str | None = None  # force an importer for a file source
    topic: str | None = None  # default topic for this source's items
    follow_symlinks: bool = False  # read files that symbolic links in the folder lead to
    max_file_mb: float = Field(64, gt=0, le=100_000)  # a larger file is reported and skipped
    # a private feed: sent only to the host of `url` (see fetch/access.py)
    auth: SourceAuth | None = None
    headers: dict[str, str] = Field(default_factory=dict)  # values may be "env:NAME"
    cookies: dict[str, str] = Field(default_factory=dict)  # values may be "env:NAME"
    user_agent: str | None = None  # instead of [fetch] user_agent, for this feed
    paused: bool = False  # not collected (`digest sources pause|resume`); its items stay
    # newsletters: kind "imap" (host, user, password_env or password_file, folder), or
    # "maildir" / "mbox" (path); each letter read once, a roundup split into its stories
    host: str | None = None
    port: int | None = Field(None, ge=1, le=65535)  # default 993 for "ssl", else 143
    security: Literal["ssl", "starttls", "none"] = "ssl"
    user: str | None = None
    password_env: str | None = None
    password_file: Path | None = None
    folder: str = "INBOX"
    senders: list[str] = Field(default_factory=list)  # only from these addresses or domains
    lists: list[str] = Field(default_factory=list)  # only on these lists (part of List-Id)
    mark_seen: bool = False  # imap: flag each letter read as seen; never, unless set
    move_to: str | None = None  # imap: move each letter read to this folder
    ca_file: Path | None = None  # imap: trust this certificate too (a self-signed server)

    @field_validator("headers", "cookies")
    @classmethod
    def _sendable(cls, value: dict[str, str]) -> dict[str, str]:
        for name, text in value.items():
            if not _HEADER_NAME.fullmatch(name):
                raise ValueError(f"{name!r} is not a valid header or cookie name")
            if name.lower() in _MANAGED_HEADERS:
                raise ValueError(f"{name!r} is set by digest itself")
            if (bad := _NOT_HEADER_VALUE.search(text)) is not None:
                raise ValueError(f"the value of {name!r} {_unsendable(bad[0])}")
        return value

    @field_validator("user_agent")
    @classmethod
    def _one_line(cls, value: str | None) -> str | None:
        if value is not None and (bad := _NOT_HEADER_VALUE.search(value)) is not None:
            raise ValueError(_unsendable(bad[0]))
        return value

    @property
    def is_private(self) -> bool:
        return bool(self.auth or self.headers or self.cookies)

    @property
    def imap_location(self) -> str | None:
        """Where an imap source reads, as `digest sources` and `status` show it."""
        if self.kind != "imap":
            return None
        port = self.port or (993 if self.security == "ssl" else 143)
        return f"imap://{self.host}:{port}/{self.folder}"

    @field_validator("url")
    @classmethod
    def _web_url(cls, value: str | None) -> str | None:
        return None if value is None else web_url(value)

    @model_validator(mode="after")
    def _kind_has_its_location(self) -> SourceConfig:
        if self.kind == "feed" and not self.url:
            raise ValueError("a feed source needs url")
        if self.kind == "file" and not self.path:
            raise ValueError("a file source needs path")
        if self.kind != "feed" and (self.is_private or self.user_agent):
            raise ValueError("auth, headers, cookies and user_agent are for feed sources")
        if self.kind in ("maildir", "mbox") and not self.path:
            raise ValueError(f"a {self.kind} source needs path")
        imap_keys = (self.host, self.user, self.password_env, self.password_file, self.move_to)
        if self.kind != "imap" and any(key is not None for key in (*imap_keys, self.ca_file)):
            raise ValueError(
                "host, user, password_env, password_file, move_to and ca_file are for imap"
            )
        if self.kind == "imap":
            if not self.host or not self.user:
                raise ValueError("an imap source needs host and user")
            if (self.password_env is None) == (self.password_file is None):
                raise ValueError("give password_env (an environment variable) or password_file")
        return self
