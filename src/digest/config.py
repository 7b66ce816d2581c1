"""The TOML config, validated by pydantic; relative paths resolve against the file's folder."""

from __future__ import annotations

import difflib
import json
import logging
import os
import re
import tomllib
from collections.abc import Callable, Collection, Iterable
from dataclasses import dataclass
from ipaddress import ip_network
from pathlib import Path
from typing import Annotated, Literal
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
    PrivateAttr,
    ValidationError,
    field_validator,
    model_validator,
)
from pydantic_core import ErrorDetails

from digest.errors import ConfigError
from digest.periods import cron_trigger
from digest.text import template_problem
from digest.urls import SHORTENER_HOSTS, BadURL, parse_url

log = logging.getLogger("digest")

DEFAULT_CONFIG_PATH = Path("config/digest.toml")
# the sources of `digest add` and `digest import`, which the config cannot name
MANUAL_SOURCE = "manual"
IMPORT_SOURCE = "import"
RESERVED_SOURCE_NAMES = frozenset({MANUAL_SOURCE, IMPORT_SOURCE})
# The fields of email.subject: {period} "2026-W47", {dates} "16–22 Nov 2026".
SUBJECT_FIELDS = ("period", "dates")


class _Section(BaseModel):
    # every number has a range (Field ge/gt and le), checked at load; no inf or nan
    model_config = ConfigDict(extra="forbid", frozen=True, allow_inf_nan=False, defer_build=True)


class DigestSection(_Section):
    data_dir: Path = Path("data")
    timezone: str = "UTC"
    week_start: Literal["monday"] = "monday"  # ISO weeks start on Monday
    backlog_unread: int = Field(0, ge=0, le=50)  # "Still unread from earlier weeks"; 0: off
    one_year_ago: bool = False  # "One year ago": items saved in the same ISO week last year
    publish_empty: bool = False  # mail and put in the feed weeks with nothing saved
    related: bool = True  # a line under an item that earlier saves connect to (a follow-up)

    @field_validator("timezone")
    @classmethod
    def _known_zone(cls, value: str) -> str:
        try:
            ZoneInfo(value)
        except (ZoneInfoNotFoundError, ValueError) as exc:
            raise ValueError(f"unknown IANA time zone {value!r}") from exc
        return value

    @property
    def zone(self) -> ZoneInfo:
        return ZoneInfo(self.timezone)


def web_url(value: str) -> str:
    """`value` if urls.parse_url takes it as an http(s) URL; else ValueError saying why."""
    parsed = parse_url(value)
    if isinstance(parsed, BadURL):
        shown = value if len(value) <= 80 else value[:79] + "…"
        raise ValueError(f"{parsed.reason}: {shown!r}")
    return parsed.url


def checked_template(value: str, fields: Collection[str]) -> str:
    """`value` if it is plain text with `{field}`s drawn from `fields`; else ValueError."""
    if (problem := template_problem(value, fields)) is not None:
        raise ValueError(problem)
    return value


ENV_PREFIX = "env:"  # a header or cookie value read from this environment variable
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


class _Secret(_Section):
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


class SourceConfig(_Section):
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
        if self.kind != "imap" and any(key is not None for key in imap_keys):
            raise ValueError("host, user, password_env, password_file and move_to are for imap")
        if self.kind == "imap":
            if not self.host or not self.user:
                raise ValueError("an imap source needs host and user")
            if (self.password_env is None) == (self.password_file is None):
                raise ValueError("give password_env (an environment variable) or password_file")
        return self


class FetchConfig(_Section):
    concurrency: int = Field(16, ge=1, le=256)
    per_host_concurrency: int = Field(2, ge=1, le=64)
    per_host_delay_s: float = Field(1.0, ge=0, le=60)  # between request starts to one host
    timeout_s: float = Field(20, gt=0, le=600)
    max_bytes: int = Field(10_000_000, ge=1024, le=1_000_000_000)
    max_redirects: int = Field(5, ge=0, le=20)
    max_items_per_feed: int = Field(
        200, ge=1, le=10_000
    )  # new entries taken per collect, newest first
    # false, true, or a list of networks (CIDR) that may be fetched although private
    allow_private_addresses: bool | list[str] = False
    user_agent: str = "digest/0.1 (+https://github.com/digest-dev/digest)"
    retry_base_s: float = Field(3600, ge=0, le=86_400)  # first retry after this, doubling each time
    retry_max_s: float = Field(7 * 86400, ge=0, le=31_536_000)  # a year
    max_attempts: int = Field(8, ge=1, le=100)  # transient failures; permanent ones stop after 3
    # links to these hosts are resolved at fetch time and the item re-keyed to where they lead
    shortener_hosts: list[str] = Field(default_factory=lambda: sorted(SHORTENER_HOSTS))
    # a saved YouTube video is read by its transcript in the first of these that it has
    # (manual captions first, then generated ones), English last; else its description
    transcript_languages: list[str] = Field(default_factory=lambda: ["en"])

    @field_validator("allow_private_addresses")
    @classmethod
    def _valid_networks(cls, value: bool | list[str]) -> bool | list[str]:
        if isinstance(value, list):
            for network in value:
                ip_network(network, strict=False)
        return value


class ModelPrice(_Section):
    input_per_mtok: float = Field(ge=0, le=100_000)
    output_per_mtok: float = Field(ge=0, le=100_000)


# OpenAI's list prices (USD per million tokens, standard tier) when this table was written.
DEFAULT_PRICES = {
    "gpt-4o-mini": ModelPrice(input_per_mtok=0.15, output_per_mtok=0.60),
    "gpt-4o": ModelPrice(input_per_mtok=2.50, output_per_mtok=10.00),
    "gpt-4.1": ModelPrice(input_per_mtok=2.00, output_per_mtok=8.00),
    "gpt-4.1-mini": ModelPrice(input_per_mtok=0.40, output_per_mtok=1.60),
    "gpt-4.1-nano": ModelPrice(input_per_mtok=0.10, output_per_mtok=0.40),
}


class LLMConfig(_Section):
    provider: Literal["offline", "openai"] = "offline"
    model: str = "gpt-4o-mini"
    summary_model: str | None = None  # the week summary; defaults to model
    base_url: str = ""
    api_key_env: str = "OPENAI_API_KEY"
    concurrency: int = Field(4, ge=1, le=64)
    timeout_s: float = Field(60, gt=0, le=3600)
    max_retries: int = Field(3, ge=0, le=10)
    language: str = "English"
    max_input_tokens: int = Field(
        6000, ge=500, le=2_000_000
    )  # longer texts are condensed before the call
    max_output_tokens: int = Field(300, ge=50, le=100_000)  # per note
    summary_max_output_tokens: int = Field(800, ge=100, le=100_000)  # the week summary
    budget_usd: float | None = Field(None, gt=0, le=10_000)  # per run; None: no cap
    # USD per million tokens, by model; merged over DEFAULT_PRICES (models in neither cost 0)
    prices: dict[str, ModelPrice] = Field(default_factory=dict)
    # deprecated here, read from [offline]; kept for the offline summariser, which reads it
    note_sentences: int = Field(3, ge=1, le=10)
    # sends of one (text, model, prompt version) over all runs; then the extractive note stands
    max_attempts: int = Field(2, ge=1, le=10)
    # the notes stage as a whole: past it no call is made; the rest stay pending
    stage_timeout_s: float = Field(1800, gt=0, le=86_400)
    # "auto": max_completion_tokens for reasoning models (o1, o3, o4, gpt-5…), else max_tokens
    token_limit_param: Literal["auto", "max_tokens", "max_completion_tokens"] = "auto"
    # Jinja templates of what the model is asked (`digest prompts export DIR`; the variables
    # are NOTE_PROMPT_VARIABLES and WEEK_PROMPT_VARIABLES); None: the built-in prompts
    prompt_file: Path | None = None
    summary_prompt_file: Path | None = None

    def price(self, model: str) -> ModelPrice | None:
        return self.prices.get(model) or DEFAULT_PRICES.get(model)

    @property
    def api_key(self) -> str | None:
        return os.environ.get(self.api_key_env) or None

    @property
    def effective_base_url(self) -> str | None:
        return self.base_url or os.environ.get("OPENAI_BASE_URL") or None


# What a prompt file may use (docs in notes/prompts.py); `text` and `notes` are the data,
# placed between two delimiter lines the model is told to treat as data only.
NOTE_PROMPT_VARIABLES = frozenset(
    {"title", "url", "site", "kind", "basis", "language", "known_tags", "text"}
)
WEEK_PROMPT_VARIABLES = frozenset({"language", "count", "notes"})


class OfflineConfig(_Section):
    """The built-in summariser, used when [llm] provider = "offline" and as the stand-in."""

    note_sentences: int = Field(3, ge=1, le=10)


_MAILBOX = re.compile(r"[^@\s<>(),;:\"\[\]\\]+@[^@\s<>(),;:\"\[\]\\]+")


def mail_addresses(entry: str) -> list[str]:
    """Every address `entry` holds ("a@x.org, B <b@y.org>": two), each as it is sent;
    ValueError naming what is not an address: none is dropped in silence."""
    from email.utils import formataddr, getaddresses

    found = getaddresses([entry])
    bad = [address or name or entry for name, address in found if not _MAILBOX.fullmatch(address)]
    if bad or not found or any(ord(c) < 32 for c in entry):
        raise ValueError(f"{entry!r}: {bad[0] if bad else entry!r} is not an email address")
    return [formataddr((name, address)) for name, address in found]


class EmailConfig(_Section):
    model_config = ConfigDict(
        extra="forbid", frozen=True, populate_by_name=True, allow_inf_nan=False
    )

    enabled: bool = False
    host: str = "localhost"
    port: int = Field(587, ge=1, le=65535)
    security: Literal["starttls", "ssl", "none"] = "starttls"
    username: str = ""
    password_env: str = "DIGEST_SMTP_PASSWORD"
    sender: str = Field("digest@example.org", alias="from")
    to: list[str] = Field(default_factory=lambda: ["me@example.org"])
    subject: str = "Your digest, {dates}"  # SUBJECT_FIELDS, nothing else
    send: Literal["once", "every_revision"] = "once"  # once: when the week is over
    timeout_s: float = Field(30, gt=0, le=600)
    ca_file: Path | None = None  # trust this certificate (self-signed servers)
    retries: int = Field(3, ge=0, le=10)  # a 4xx reply is retried this often within a run
    retry_backoff_s: float = Field(5, ge=0, le=600)  # the first pause; it doubles
    unsubscribe: str = ""  # "mailto:…" or "https://…": the List-Unsubscribe header

    @field_validator("unsubscribe")
    @classmethod
    def _unsubscribe(cls, value: str) -> str:
        if value and not (value.startswith("mailto:") or value.startswith("https://")):
            raise ValueError("must be a mailto: address or an https:// URL")
        if value.startswith("https://"):
            web_url(value)
        return value

    @field_validator("subject")
    @classmethod
    def _plain_template(cls, value: str) -> str:
        return checked_template(value, SUBJECT_FIELDS)

    @field_validator("to")
    @classmethod
    def _addresses(cls, value: list[str]) -> list[str]:
        return [address for entry in value for address in mail_addresses(entry)]

    @field_validator("sender")
    @classmethod
    def _one_address(cls, value: str) -> str:
        if len(found := mail_addresses(value)) != 1:
            raise ValueError(f"{value!r} is {len(found)} addresses: give one")
        return found[0]

    @property
    def password(self) -> str | None:
        return os.environ.get(self.password_env) or None


class OutputConfig(_Section):
    public_url: str = ""  # where <data_dir>/digests/ is served; long emails link there
    notes_dir: Path | None = None  # one markdown note per item (Obsidian-style); None: off
    # digest.md.j2 and mail.html.j2 here replace the built-in ones (`digest templates export`)
    templates_dir: Path | None = None

    @field_validator("templates_dir")
    @classmethod
    def _no_file(cls, value: Path | None) -> Path | None:
        if value is not None and value.is_file():
            raise ValueError(f"must be a folder, not the file {str(value)!r}")
        return value

    @field_validator("public_url")
    @classmethod
    def _http_url(cls, value: str) -> str:
        return web_url(value) if value else value


class AudioConfig(_Section):
    """The audio edition: the week narrated offline, an MP3 with chapters, a podcast feed."""

    enabled: bool = False
    voice: Path | None = None  # a Piper voice model (.onnx, its .json beside it); None: espeak-ng
    espeak: str = "espeak-ng"  # the espeak-ng program: a name on PATH or an absolute path
    espeak_voice: str = "en-us"
    words_per_minute: int = Field(150, ge=80, le=400)
    max_minutes: float = Field(20, gt=0, le=240)
    bitrate_kbps: Literal[32, 40, 48, 56, 64] = 48  # mono speech
    timeout_s: float = Field(900, gt=0, le=86_400)  # one chapter's synthesis is stopped past this


class NotifyConfig(_Section):
    """Push a short message of each week through Apprise (https://github.com/caronc/apprise)."""

    # Apprise URLs (tgram://, ntfy://, json://…); "env:NAME" reads one from the environment
    urls: list[str] = Field(default_factory=list)
    retries: int = Field(2, ge=0, le=10)  # a failed send is retried this often within a run
    retry_backoff_s: float = Field(5, ge=0, le=600)  # the first pause; it doubles
    timeout_s: float = Field(15, gt=0, le=300)

    @field_validator("urls")
    @classmethod
    def _urls(cls, urls: list[str]) -> list[str]:
        for number, url in enumerate(urls, 1):
            if not url.startswith(ENV_PREFIX) and "://" not in url:
                raise ValueError(
                    f"URL {number} is neither an Apprise URL (scheme://…) nor env:NAME"
                )
        return urls


class EpubConfig(_Section):
    """The week as an EPUB book: digests/YYYY-Www.epub, mailed to an e-reader if asked."""

    enabled: bool = False
    send_to: str = ""  # mailed here as an attachment through [email]'s server, once per revision


class SiteConfig(_Section):
    """The archive site: every week, a page per section, full-text search (Pagefind)."""

    enabled: bool = False  # rebuilt after each revision
    out: Path | None = None  # None: <data_dir>/site


class LogConfig(_Section):
    file: Path | None = None  # None: stderr (journald); else a rotating file
    max_bytes: int = Field(1_000_000, ge=10_000, le=1_000_000_000)
    backups: int = Field(5, ge=1, le=100)


class ScheduleConfig(_Section):
    collect: str = "0 * * * *"
    digest: str = "0 8 * * mon"

    @field_validator("collect", "digest")
    @classmethod
    def _valid_cron(cls, value: str) -> str:
        try:
            cron_trigger(value, "UTC")
        except ValueError as exc:
            raise ValueError(f"not a cron expression: {value!r} ({exc})") from exc
        return value


_MATCHERS = (
    "host",
    "source",
    "kind",
    "tags",
    "words",
    "regex",
    "language",
    "min_words",
    "max_words",
    "min_minutes",
    "max_minutes",
)
_ACTIONS = ("mute", "skip_notes", "pin", "tag", "section")


class RuleConfig(_Section):
    """One [[rules]] entry: what it matches (every condition given must hold; a list matches
    when any of its values does) and what it does to the items it matches."""

    name: str
    host: list[str] = Field(default_factory=list)  # example.com matches its subdomains too
    source: list[str] = Field(default_factory=list)
    kind: list[Literal["link", "note", "post", "newsletter"]] = Field(default_factory=list)
    tags: list[str] = Field(default_factory=list)  # the note's tags or the item's topic
    words: list[str] = Field(default_factory=list)  # whole words or phrases, in title or text
    regex: str | None = None  # searched in the title and text (RE2: digest.patterns)
    language: list[str] = Field(default_factory=list)  # the page's language: "en", "de"…
    min_words: int | None = Field(None, ge=0, le=10_000_000)
    max_words: int | None = Field(None, ge=0, le=10_000_000)
    # reading time at digest.reading.WORDS_PER_MINUTE (230) of the page, else of what was saved
    min_minutes: float | None = Field(None, ge=0, le=100_000)
    max_minutes: float | None = Field(None, ge=0, le=100_000)
    mute: bool = False  # kept and searchable, left out of the digest (and noted offline)
    skip_notes: bool = False  # noted offline: no model call is spent on it
    pin: bool = False  # first in its section, and in "Must read"
    tag: list[str] = Field(default_factory=list)  # added to the note's tags in the digest
    section: str | None = None  # shown under this section

    @field_validator("host", "source", "kind", "tags", "words", "language", "tag", mode="before")
    @classmethod
    def _one_or_a_list(cls, value: object) -> object:
        return [value] if isinstance(value, str) else value

    @field_validator("regex")
    @classmethod
    def _compiles(cls, value: str | None) -> str | None:
        if value is not None:
            from digest.patterns import compile_pattern

            compile_pattern(value)  # ValueError: why RE2 takes it not
        return value

    @model_validator(mode="after")
    def _matches_and_acts(self) -> RuleConfig:
        if not any(getattr(self, key) not in (None, []) for key in _MATCHERS):
            raise ValueError(
                f"rule {self.name!r} matches nothing: give one of {', '.join(_MATCHERS)}"
            )
        if not any(getattr(self, key) not in (None, [], False) for key in _ACTIONS):
            raise ValueError(f"rule {self.name!r} does nothing: give one of {', '.join(_ACTIONS)}")
        return self


class Config(_Section):
    digest: DigestSection = DigestSection()
    sources: list[SourceConfig] = Field(default_factory=list)
    # what the reader cares about: ranks each section's items (see compose/ranking.py)
    interests: list[str] = Field(default_factory=list)
    rules: list[RuleConfig] = Field(default_factory=list)
    fetch: FetchConfig = FetchConfig()
    llm: LLMConfig = LLMConfig()
    offline: OfflineConfig = OfflineConfig()
    email: EmailConfig = EmailConfig()
    schedule: ScheduleConfig = ScheduleConfig()
    output: OutputConfig = OutputConfig()
    audio: AudioConfig = AudioConfig()
    notify: NotifyConfig = NotifyConfig()
    epub: EpubConfig = EpubConfig()
    site: SiteConfig = SiteConfig()
    log: LogConfig = LogConfig()
    _path: Path | None = PrivateAttr(None)  # the file it came from, if any

    @model_validator(mode="after")
    def _unique_source_names(self) -> Config:
        names = [source.name for source in self.sources]
        reserved = sorted(set(names) & RESERVED_SOURCE_NAMES)
        if reserved:
            raise ValueError(
                f"source name {reserved[0]!r} is reserved for links saved with"
                f" `digest {reserved[0] if reserved[0] != 'manual' else 'add'}`; choose another"
            )
        duplicated = sorted({name for name in names if names.count(name) > 1})
        if duplicated:
            raise ValueError(f"source names must be unique: {', '.join(duplicated)}")
        return self

    @model_validator(mode="after")
    def _unique_rule_names(self) -> Config:
        names = [rule.name for rule in self.rules]
        if duplicated := sorted({name for name in names if names.count(name) > 1}):
            raise ValueError(f"rule names must be unique: {', '.join(duplicated)}")
        return self

    @model_validator(mode="after")
    def _offline_settings_reach_the_summariser(self) -> Config:
        sentences = self.offline.note_sentences
        if self.llm.note_sentences != sentences:
            # frozen: the model is still being built here, and only this validator sets llm
            object.__setattr__(
                self, "llm", self.llm.model_copy(update={"note_sentences": sentences})
            )
        return self

    @property
    def path(self) -> Path | None:
        return self._path

    @property
    def data_dir(self) -> Path:
        return self.digest.data_dir

    @property
    def db_path(self) -> Path:
        return self.data_dir / "digest.db"

    @property
    def site_dir(self) -> Path:
        return self.site.out or self.digest.data_dir / "site"

    @property
    def digests_dir(self) -> Path:
        return self.data_dir / "digests"

    @property
    def log_path(self) -> Path:
        return self.data_dir / "digest-log.md"


@dataclass(frozen=True)
class ConfigLocation:
    """The config file in use (None: the built-in defaults) and how it was found."""

    path: Path | None
    found_by: str


def user_config_path() -> Path:
    return _xdg_home("XDG_CONFIG_HOME", ".config") / "digest" / "digest.toml"


def user_data_dir() -> Path:
    return _xdg_home("XDG_DATA_HOME", ".local/share") / "digest"


def _xdg_home(variable: str, fallback: str) -> Path:
    value = os.environ.get(variable, "")
    # the XDG base directory spec: a relative value is invalid and ignored
    return Path(value) if value and Path(value).is_absolute() else Path.home() / fallback


def locate_config(explicit: Path | None) -> ConfigLocation:
    """--config, else $DIGEST_CONFIG, else ./config/digest.toml, else the user's config."""
    if explicit is not None:
        return ConfigLocation(explicit, "--config")
    if env := os.environ.get("DIGEST_CONFIG"):
        return ConfigLocation(Path(env), "$DIGEST_CONFIG")
    if DEFAULT_CONFIG_PATH.is_file():
        return ConfigLocation(DEFAULT_CONFIG_PATH.absolute(), "./config/digest.toml")
    if (user_config := user_config_path()).is_file():
        return ConfigLocation(user_config, "the user config")
    return ConfigLocation(None, "no config file: built-in defaults")


def load_config(explicit: Path | None = None) -> Config:
    path = locate_config(explicit).path
    if path is None:
        defaults = Config(digest=DigestSection(data_dir=user_data_dir()))
        return _resolve_paths(defaults, Path.cwd())
    try:
        text = path.read_text(encoding="utf-8")
    except OSError as exc:
        raise ConfigError(f"config error: {path}: cannot read: {exc.strerror}") from exc
    return parse_config(text, path)


def parse_config(text: str, path: Path) -> Config:
    try:
        raw = tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        raise ConfigError(f"config error: {path}: {exc}") from exc
    _read_deprecated_keys(raw, text, path)
    try:
        config = Config.model_validate(raw)
    except ValidationError as exc:
        raise ConfigError(describe_validation_errors(exc, text, path)) from exc
    config._path = path  # private: not a key the file may set
    resolved = _resolve_paths(config, path.resolve().parent)
    _check_prompt_files(resolved)
    return resolved


def default_config_text(data_dir: Path) -> str:
    """The commented default config (config/digest.toml) with its data in `data_dir`."""
    from importlib.resources import files

    text = files("digest").joinpath("default.toml").read_text(encoding="utf-8")
    return re.sub(
        r'"\.\./data(/[^"]*)?"',
        # a JSON string is a valid TOML basic string
        lambda match: json.dumps(str(data_dir) + (match[1] or "")),
        text,
    )


def _read_deprecated_keys(raw: dict[str, object], text: str, path: Path) -> None:
    """[llm] note_sentences moved to [offline]: still read, with a warning."""
    llm, offline = raw.get("llm"), raw.setdefault("offline", {})
    if isinstance(llm, dict) and "note_sentences" in llm and isinstance(offline, dict):
        line = _find_line(text, ["llm", "note_sentences"])
        where = f"{path}:{line}" if line else str(path)
        log.warning("config: %s: [llm] note_sentences is deprecated; move it to [offline]", where)
        offline.setdefault("note_sentences", llm.pop("note_sentences"))


def _resolve_paths(config: Config, base: Path) -> Config:
    def resolve(p: Path) -> Path:
        p = p.expanduser()
        return p if p.is_absolute() else (base / p).resolve()

    sources = [_resolve_source_paths(s, resolve) for s in config.sources]
    email = config.email
    if email.ca_file:
        email = email.model_copy(update={"ca_file": resolve(email.ca_file)})
    digest = config.digest.model_copy(update={"data_dir": resolve(config.digest.data_dir)})
    output, log, audio = config.output, config.log, config.audio
    if output.notes_dir:
        output = output.model_copy(update={"notes_dir": resolve(output.notes_dir)})
    if output.templates_dir:
        output = output.model_copy(update={"templates_dir": resolve(output.templates_dir)})
    if log.file:
        log = log.model_copy(update={"file": resolve(log.file)})
    files = {
        key: resolve(value)
        for key in ("prompt_file", "summary_prompt_file")
        if (value := getattr(config.llm, key)) is not None
    }
    llm = config.llm.model_copy(update=files)
    if audio.voice:
        audio = audio.model_copy(update={"voice": resolve(audio.voice)})
    site = config.site
    if site.out:
        site = site.model_copy(update={"out": resolve(site.out)})
    return config.model_copy(
        update={
            "digest": digest,
            "sources": sources,
            "email": email,
            "output": output,
            "log": log,
            "llm": llm,
            "audio": audio,
            "site": site,
        }
    )


def read_prompt_file(path: Path, key: str) -> str:
    """The text of the prompt file at `path`; ConfigError naming the key and the file when
    it cannot be read. What it says is the run's to check (notes/prompts.py): one that does
    not parse, or uses a variable it is not given, costs the run its words, not the load."""
    try:
        return path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise ConfigError(f"config error: {key}: cannot read {path}: {exc}") from exc


def _check_prompt_files(config: Config) -> None:
    for key in ("prompt_file", "summary_prompt_file"):
        if (path := getattr(config.llm, key)) is not None:
            read_prompt_file(path, f"llm.{key}")


def _resolve_source_paths(source: SourceConfig, resolve: Callable[[Path], Path]) -> SourceConfig:
    update: dict[str, object] = {"path": resolve(source.path)} if source.path else {}
    if source.password_file:
        update["password_file"] = resolve(source.password_file)
    auth = source.auth
    if isinstance(auth, BasicAuth) and auth.password_file:
        update["auth"] = auth.model_copy(update={"password_file": resolve(auth.password_file)})
    if isinstance(auth, BearerAuth) and auth.token_file:
        update["auth"] = auth.model_copy(update={"token_file": resolve(auth.token_file)})
    return source.model_copy(update=update) if update else source


def describe_validation_errors(exc: ValidationError, text: str, path: Path) -> str:
    """Every problem pydantic found, one line each, in our words."""
    lines = []
    for error in exc.errors():
        location = [str(part) for part in error["loc"]]
        line = _find_line(text, location)
        where = f"{path}:{line}" if line else str(path)
        lines.append(f"config error: {where}: {_dotted_key(location)}: {_in_our_words(error)}")
    return "\n".join(lines)


_BOUNDS = {
    "greater_than_equal": ("at least", "ge"),
    "less_than_equal": ("at most", "le"),
    "greater_than": ("more than", "gt"),
    "less_than": ("less than", "lt"),
}
_TABLE = "must be a table ([section] or { key = value })"
_EXPECTED = {
    "int_parsing": "must be a whole number",
    "int_type": "must be a whole number",
    "int_from_float": "must be a whole number",
    "float_parsing": "must be a number",
    "float_type": "must be a number",
    "bool_parsing": "must be true or false",
    "bool_type": "must be true or false",
    "string_type": 'must be text in quotes ("...")',
    "list_type": "must be a list ([...])",
    "model_type": _TABLE,
    "model_attributes_type": _TABLE,
    "dict_type": _TABLE,
    "finite_number": "must be a finite number",
}


def _in_our_words(error: ErrorDetails) -> str:
    kind, given, context = error["type"], error.get("input"), error.get("ctx", {})
    if kind == "extra_forbidden":
        return "unknown key" + _did_you_mean([str(part) for part in error["loc"]])
    if kind == "missing":
        return "required here"
    if kind == "value_error":
        return str(context.get("error", error["msg"]))
    if kind == "literal_error":
        return f"must be one of {context.get('expected', '')}, not {given!r}"
    if kind in _BOUNDS:
        words, key = _BOUNDS[kind]
        allowed = _range_of([str(part) for part in error["loc"]])
        return f"must be {allowed or f'{words} {context.get(key)}'}, not {given!r}"
    if kind in _EXPECTED:
        return f"{_EXPECTED[kind]}, not {given!r}"
    return str(error["msg"])


def _did_you_mean(location: list[str]) -> str:
    # In TOML a key written after a [table] header belongs to that table.
    if len(location) > 1 and location[-1] in ("interests", "rules"):
        return f"; {location[-1]} goes at the top of the file, before any [section]"
    known = _keys_at(location[:-1])
    close = difflib.get_close_matches(location[-1], known, n=1, cutoff=0.6)
    return f"; did you mean {close[0]!r}?" if close else ""


def _range_of(location: list[str]) -> str | None:
    """The documented range of the number at `location`: "at least 0 and at most 86400"."""
    model = _model_at(location[:-1])
    field = model.model_fields.get(location[-1]) if model is not None else None
    if field is None:
        return None
    return range_words(field.metadata)


def range_words(constraints: Iterable[object]) -> str | None:
    """A field's bounds (annotated_types Ge, Gt, Le, Lt) in words, lower bound first."""
    words = {
        "ge": "at least",
        "gt": "more than",
        "le": "at most",
        "lt": "less than",
    }
    parts = [
        f"{words[name]} {getattr(bound, name):_}"
        for name in words
        for bound in constraints
        if getattr(bound, name, None) is not None
    ]
    return " and ".join(parts) or None


def _model_at(location: list[str]) -> type[BaseModel] | None:
    """The model of the table at `location` (list indexes and dict keys skipped)."""
    model: type[BaseModel] = Config
    for part in location:
        field = model.model_fields.get(part)
        if field is None:
            continue  # an index into [[sources]] or a key of [llm.prices]
        nested = _model_in(field.annotation)
        if nested is None:
            return None
        model = nested
    return model


def _keys_at(location: list[str]) -> list[str]:
    """The keys the table at `location` accepts (list indexes and dict keys skipped)."""
    model = _model_at(location)
    if model is None:
        return []
    hidden = {"note_sentences"} if model is LLMConfig else set()
    return [field.alias or name for name, field in model.model_fields.items() if name not in hidden]


def _model_in(annotation: object) -> type[BaseModel] | None:
    if isinstance(annotation, type) and issubclass(annotation, BaseModel):
        return annotation
    for argument in getattr(annotation, "__args__", ()):
        if (model := _model_in(argument)) is not None:
            return model
    return None


_TABLE_ARRAYS = ("sources", "rules")  # [[sources]], [[rules]]: located by their n-th header


def _dotted_key(location: list[str]) -> str:
    if location and location[0] in _TABLE_ARRAYS and len(location) > 1 and location[1].isdigit():
        rest = ".".join(location[2:])
        return f"{location[0]}[{int(location[1]) + 1}]" + (f".{rest}" if rest else "")
    return ".".join(location)


def _find_line(text: str, location: list[str]) -> int | None:
    """Best effort: the line of the key in its [section] (or n-th [[sources]])."""
    if not location:
        return None
    lines = text.splitlines()
    section_start = 0
    key = location[-1]
    if location[0] in _TABLE_ARRAYS and len(location) > 1 and location[1].isdigit():
        header = re.compile(rf"\s*\[\[{location[0]}\]\]")
        headers = [i for i, line in enumerate(lines) if header.match(line)]
        index = int(location[1])
        if index >= len(headers):
            return None
        section_start = headers[index]
        if len(location) == 2:
            return section_start + 1
    elif len(location) > 1:
        for i, line in enumerate(lines):
            if re.match(rf"\s*\[{re.escape(location[0])}\]\s*(#.*)?$", line):
                section_start = i
                break
        else:
            return None
    for i in range(section_start, len(lines)):
        if i > section_start and re.match(r"\s*\[", lines[i]) and len(location) > 1:
            break
        if re.match(rf"\s*({re.escape(key)}\s*=|\[\[?{re.escape(key)}\]\]?\s*(#.*)?$)", lines[i]):
            return i + 1
    return None
