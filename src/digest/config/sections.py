"""The config's [sections], one model each, apart from [[sources]] and [[rules]]."""

from __future__ import annotations

import os
from ipaddress import ip_network
from pathlib import Path
from typing import Literal
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

from pydantic import ConfigDict, Field, field_validator

from digest.config.values import (
    ENV_PREFIX,
    Section,
    checked_template,
    mail_addresses,
    web_url,
)
from digest.periods import cron_trigger
from digest.urls import SHORTENER_HOSTS

# The fields of email.subject: {period} "2026-W47", {dates} "16–22 Nov 2026".
SUBJECT_FIELDS = ("period", "dates")


class DigestSection(Section):
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


class FetchConfig(Section):
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


class ModelPrice(Section):
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


class LLMConfig(Section):
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


class OfflineConfig(Section):
    """The built-in summariser, used when [llm] provider = "offline" and as the stand-in."""

    note_sentences: int = Field(3, ge=1, le=10)


class EmailConfig(Section):
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


class OutputConfig(Section):
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


class AudioConfig(Section):
    """The audio edition: the week narrated offline, an MP3 with chapters, a podcast feed."""

    enabled: bool = False
    voice: Path | None = None  # a Piper voice model (.onnx, its .json beside it); None: espeak-ng
    espeak: str = "espeak-ng"  # the espeak-ng program: a name on PATH or an absolute path
    espeak_voice: str = "en-us"
    words_per_minute: int = Field(150, ge=80, le=400)
    max_minutes: float = Field(20, gt=0, le=240)
    bitrate_kbps: Literal[32, 40, 48, 56, 64] = 48  # mono speech
    timeout_s: float = Field(900, gt=0, le=86_400)  # one chapter's synthesis is stopped past this


class NotifyConfig(Section):
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


class EpubConfig(Section):
    """The week as an EPUB book: digests/YYYY-Www.epub, mailed to an e-reader if asked."""

    enabled: bool = False
    send_to: str = ""  # mailed here as an attachment through [email]'s server, once per revision


class SiteConfig(Section):
    """The archive site: every week, a page per section, full-text search (Pagefind)."""

    enabled: bool = False  # rebuilt after each revision
    out: Path | None = None  # None: <data_dir>/site


class LogConfig(Section):
    file: Path | None = None  # None: stderr (journald); else a rotating file
    max_bytes: int = Field(1_000_000, ge=10_000, le=1_000_000_000)
    backups: int = Field(5, ge=1, le=100)


class ScheduleConfig(Section):
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
