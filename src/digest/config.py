"""The TOML config, validated by pydantic; relative paths resolve against the file's folder."""

from __future__ import annotations

import difflib
import json
import logging
import os
import re
import tomllib
from collections.abc import Collection
from dataclasses import dataclass
from ipaddress import ip_network
from pathlib import Path
from typing import Literal
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
    model_config = ConfigDict(extra="forbid", frozen=True)


class DigestSection(_Section):
    data_dir: Path = Path("data")
    timezone: str = "UTC"
    week_start: Literal["monday"] = "monday"  # ISO weeks start on Monday
    backlog_unread: int = Field(0, ge=0, le=50)  # "Still unread from earlier weeks"; 0: off
    one_year_ago: bool = False  # "One year ago": items saved in the same ISO week last year
    publish_empty: bool = False  # mail and put in the feed weeks with nothing saved

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
    max_items_per_feed: int = Field(200, ge=1)  # new entries taken per collect, newest first
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
    # deprecated here, read from [offline]; kept for the offline summariser, which reads it
    note_sentences: int = Field(3, ge=1, le=10)
    # sends of one (text, model, prompt version) over all runs; then the extractive note stands
    max_attempts: int = Field(2, ge=1, le=10)
    # "auto": max_completion_tokens for reasoning models (o1, o3, o4, gpt-5…), else max_tokens
    token_limit_param: Literal["auto", "max_tokens", "max_completion_tokens"] = "auto"

    def price(self, model: str) -> ModelPrice | None:
        return self.prices.get(model) or DEFAULT_PRICES.get(model)

    @property
    def api_key(self) -> str | None:
        return os.environ.get(self.api_key_env) or None

    @property
    def effective_base_url(self) -> str | None:
        return self.base_url or os.environ.get("OPENAI_BASE_URL") or None


class OfflineConfig(_Section):
    """The built-in summariser, used when [llm] provider = "offline" and as the stand-in."""

    note_sentences: int = Field(3, ge=1, le=10)


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
    subject: str = "Your digest, {dates}"  # SUBJECT_FIELDS, nothing else
    send: Literal["once", "every_revision"] = "once"  # once: when the week is over
    timeout_s: float = Field(30, gt=0)
    ca_file: Path | None = None  # trust this certificate (self-signed servers)
    retries: int = Field(3, ge=0, le=10)  # a 4xx reply is retried this often within a run
    retry_backoff_s: float = Field(5, ge=0, le=600)  # the first pause; it doubles

    @field_validator("subject")
    @classmethod
    def _plain_template(cls, value: str) -> str:
        return checked_template(value, SUBJECT_FIELDS)

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
    offline: OfflineConfig = OfflineConfig()
    email: EmailConfig = EmailConfig()
    schedule: ScheduleConfig = ScheduleConfig()
    output: OutputConfig = OutputConfig()
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
    return _resolve_paths(config, path.resolve().parent)


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
        return f"must be {words} {context.get(key)}, not {given!r}"
    if kind in _EXPECTED:
        return f"{_EXPECTED[kind]}, not {given!r}"
    return str(error["msg"])


def _did_you_mean(location: list[str]) -> str:
    known = _keys_at(location[:-1])
    close = difflib.get_close_matches(location[-1], known, n=1, cutoff=0.6)
    return f"; did you mean {close[0]!r}?" if close else ""


def _keys_at(location: list[str]) -> list[str]:
    """The keys the table at `location` accepts (list indexes and dict keys skipped)."""
    model: type[BaseModel] = Config
    for part in location:
        field = model.model_fields.get(part)
        if field is None:
            continue  # an index into [[sources]] or a key of [llm.prices]
        nested = _model_in(field.annotation)
        if nested is None:
            return []
        model = nested
    hidden = {"note_sentences"} if model is LLMConfig else set()
    return [field.alias or name for name, field in model.model_fields.items() if name not in hidden]


def _model_in(annotation: object) -> type[BaseModel] | None:
    if isinstance(annotation, type) and issubclass(annotation, BaseModel):
        return annotation
    for argument in getattr(annotation, "__args__", ()):
        if (model := _model_in(argument)) is not None:
            return model
    return None


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
        if i > section_start and re.match(r"\s*\[", lines[i]) and len(location) > 1:
            break
        if re.match(rf"\s*({re.escape(key)}\s*=|\[\[?{re.escape(key)}\]\]?\s*(#.*)?$)", lines[i]):
            return i + 1
    return None
