"""The TOML config, validated by pydantic; relative paths resolve against the file's folder."""

from __future__ import annotations

import os
import re
import tomllib
from ipaddress import ip_network
from pathlib import Path
from typing import Literal
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator, model_validator

from digest.errors import ConfigError
from digest.urls import SHORTENER_HOSTS, BadURL, parse_url

DEFAULT_CONFIG_PATH = Path("config/digest.toml")
# the sources of `digest add` and `digest import`, which the config cannot name
MANUAL_SOURCE = "manual"
IMPORT_SOURCE = "import"
RESERVED_SOURCE_NAMES = frozenset({MANUAL_SOURCE, IMPORT_SOURCE})


class _Section(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class DigestSection(_Section):
    data_dir: Path = Path("data")
    timezone: str = "UTC"
    week_start: Literal["monday"] = "monday"  # ISO weeks start on Monday
    backlog_unread: int = Field(0, ge=0, le=50)  # "Still unread from earlier weeks"; 0: off
    one_year_ago: bool = False  # "One year ago": items saved in the same ISO week last year

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


class SourceConfig(_Section):
    name: str
    kind: Literal["feed", "file"]
    url: str | None = None
    path: Path | None = None
    format: str | None = None  # force an importer for a file source
    topic: str | None = None  # default topic for this source's items

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
        return self


class FetchConfig(_Section):
    concurrency: int = Field(16, ge=1, le=256)
    per_host_concurrency: int = Field(2, ge=1, le=64)
    per_host_delay_s: float = Field(1.0, ge=0, le=60)  # between request starts to one host
    timeout_s: float = Field(20, gt=0)
    max_bytes: int = Field(10_000_000, ge=1024)
    max_redirects: int = Field(5, ge=0, le=20)
    # false, true, or a list of networks (CIDR) that may be fetched although private
    allow_private_addresses: bool | list[str] = False
    user_agent: str = "digest/0.1 (+https://github.com/digest-dev/digest)"
    retry_base_s: float = Field(3600, ge=0)  # first retry after this, doubling each time
    retry_max_s: float = Field(7 * 86400, ge=0)
    max_attempts: int = Field(8, ge=1)  # transient failures; permanent ones stop after 3
    # links to these hosts are resolved at fetch time and the item re-keyed to where they lead
    shortener_hosts: list[str] = Field(default_factory=lambda: sorted(SHORTENER_HOSTS))

    @field_validator("allow_private_addresses")
    @classmethod
    def _valid_networks(cls, value: bool | list[str]) -> bool | list[str]:
        if isinstance(value, list):
            for network in value:
                ip_network(network, strict=False)
        return value


class ModelPrice(_Section):
    input_per_mtok: float = Field(ge=0)
    output_per_mtok: float = Field(ge=0)


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
    timeout_s: float = Field(60, gt=0)
    max_retries: int = Field(3, ge=0, le=10)
    language: str = "English"
    max_input_tokens: int = Field(6000, ge=500)  # longer texts are condensed before the call
    max_output_tokens: int = Field(300, ge=50)  # per note
    summary_max_output_tokens: int = Field(800, ge=100)  # the week summary
    budget_usd: float | None = Field(None, gt=0)  # per run; None: no cap
    # USD per million tokens, by model; merged over DEFAULT_PRICES (models in neither cost 0)
    prices: dict[str, ModelPrice] = Field(default_factory=dict)
    note_sentences: int = Field(3, ge=1, le=10)  # the offline summariser's length

    def price(self, model: str) -> ModelPrice | None:
        return self.prices.get(model) or DEFAULT_PRICES.get(model)

    @property
    def api_key(self) -> str | None:
        return os.environ.get(self.api_key_env) or None

    @property
    def effective_base_url(self) -> str | None:
        return self.base_url or os.environ.get("OPENAI_BASE_URL") or None


class EmailConfig(_Section):
    model_config = ConfigDict(extra="forbid", frozen=True, populate_by_name=True)

    enabled: bool = False
    host: str = "localhost"
    port: int = Field(587, ge=1, le=65535)
    security: Literal["starttls", "ssl", "none"] = "starttls"
    username: str = ""
    password_env: str = "DIGEST_SMTP_PASSWORD"
    sender: str = Field("digest@example.org", alias="from")
    to: list[str] = Field(default_factory=lambda: ["me@example.org"])
    subject: str = "Your digest for {period}"
    timeout_s: float = Field(30, gt=0)
    ca_file: Path | None = None  # trust this certificate (self-signed servers)
    retries: int = Field(3, ge=0, le=10)  # a 4xx reply is retried this often within a run
    retry_backoff_s: float = Field(5, ge=0, le=600)  # the first pause; it doubles

    @property
    def password(self) -> str | None:
        return os.environ.get(self.password_env) or None


class OutputConfig(_Section):
    public_url: str = ""  # where <data_dir>/digests/ is served; long emails link there
    notes_dir: Path | None = None  # one markdown note per item (Obsidian-style); None: off

    @field_validator("public_url")
    @classmethod
    def _http_url(cls, value: str) -> str:
        return web_url(value) if value else value


class LogConfig(_Section):
    file: Path | None = None  # None: stderr (journald); else a rotating file
    max_bytes: int = Field(1_000_000, ge=10_000)
    backups: int = Field(5, ge=1, le=100)


class ScheduleConfig(_Section):
    collect: str = "0 * * * *"
    digest: str = "0 8 * * mon"

    @field_validator("collect", "digest")
    @classmethod
    def _valid_cron(cls, value: str) -> str:
        from digest.daemon import cron_trigger

        try:
            cron_trigger(value, "UTC")
        except ValueError as exc:
            raise ValueError(f"not a cron expression: {value!r} ({exc})") from exc
        return value


class Config(_Section):
    digest: DigestSection = DigestSection()
    sources: list[SourceConfig] = Field(default_factory=list)
    fetch: FetchConfig = FetchConfig()
    llm: LLMConfig = LLMConfig()
    email: EmailConfig = EmailConfig()
    schedule: ScheduleConfig = ScheduleConfig()
    output: OutputConfig = OutputConfig()
    log: LogConfig = LogConfig()
    path: Path | None = Field(None, exclude=True)  # the file it came from, if any

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

    @property
    def data_dir(self) -> Path:
        return self.digest.data_dir

    @property
    def db_path(self) -> Path:
        return self.data_dir / "digest.db"

    @property
    def digests_dir(self) -> Path:
        return self.data_dir / "digests"

    @property
    def log_path(self) -> Path:
        return self.data_dir / "digest-log.md"


def find_config_path(explicit: Path | None) -> Path | None:
    """--config, else $DIGEST_CONFIG, else ./config/digest.toml if it exists, else None."""
    if explicit is not None:
        return explicit
    if env := os.environ.get("DIGEST_CONFIG"):
        return Path(env)
    return DEFAULT_CONFIG_PATH if DEFAULT_CONFIG_PATH.is_file() else None


def load_config(explicit: Path | None = None) -> Config:
    path = find_config_path(explicit)
    if path is None:
        return _resolve_paths(Config(), Path.cwd())
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
    try:
        config = Config.model_validate(raw)
    except ValidationError as exc:
        raise ConfigError(_describe_validation_error(exc, text, path)) from exc
    return _resolve_paths(config.model_copy(update={"path": path}), path.resolve().parent)


def _resolve_paths(config: Config, base: Path) -> Config:
    def resolve(p: Path) -> Path:
        return p if p.is_absolute() else (base / p).resolve()

    sources = [
        s.model_copy(update={"path": resolve(s.path)}) if s.path else s for s in config.sources
    ]
    email = config.email
    if email.ca_file:
        email = email.model_copy(update={"ca_file": resolve(email.ca_file)})
    digest = config.digest.model_copy(update={"data_dir": resolve(config.digest.data_dir)})
    output, log = config.output, config.log
    if output.notes_dir:
        output = output.model_copy(update={"notes_dir": resolve(output.notes_dir)})
    if log.file:
        log = log.model_copy(update={"file": resolve(log.file)})
    return config.model_copy(
        update={"digest": digest, "sources": sources, "email": email, "output": output, "log": log}
    )


def _describe_validation_error(exc: ValidationError, text: str, path: Path) -> str:
    error = exc.errors()[0]
    location = [str(part) for part in error["loc"]]
    key = _dotted_key(location)
    line = _find_line(text, location)
    where = f"{path}:{line}" if line else str(path)
    message = error["msg"]
    if error["type"] == "extra_forbidden":
        message = "unknown key"
    return f"config error: {where}: {key}: {message}"


def _dotted_key(location: list[str]) -> str:
    if location and location[0] == "sources" and len(location) > 1 and location[1].isdigit():
        rest = ".".join(location[2:])
        return f"sources[{int(location[1]) + 1}]" + (f".{rest}" if rest else "")
    return ".".join(location)


def _find_line(text: str, location: list[str]) -> int | None:
    """Best effort: the line of the key in its [section] (or n-th [[sources]])."""
    if not location:
        return None
    lines = text.splitlines()
    section_start = 0
    key = location[-1]
    if location[0] == "sources" and len(location) > 1 and location[1].isdigit():
        headers = [i for i, line in enumerate(lines) if re.match(r"\s*\[\[sources\]\]", line)]
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
        if i > section_start and re.match(r"\s*\[", lines[i]):
            break
        if re.match(rf"\s*{re.escape(key)}\s*=", lines[i]):
            return i + 1
    return None
