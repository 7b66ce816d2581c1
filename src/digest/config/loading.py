"""Finding the config file, reading its TOML, resolving its paths against its folder."""

from __future__ import annotations

import json
import logging
import os
import re
import tomllib
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from pydantic import ValidationError

from digest.config.messages import describe_validation_errors, find_line
from digest.config.models import Config
from digest.config.sections import DigestSection
from digest.config.sources import BasicAuth, BearerAuth, SourceConfig
from digest.errors import ConfigError
from digest.userfiles import CONFIG_BYTES, UserFileError, read_small_text

log = logging.getLogger("digest")

DEFAULT_CONFIG_PATH = Path("config/digest.toml")


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
        text = read_small_text(path, "a config", CONFIG_BYTES)
    except UserFileError as exc:
        raise ConfigError(f"config error: {exc}") from exc
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
        line = find_line(text, ["llm", "note_sentences"])
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
        return read_small_text(path, "a prompt")
    except UserFileError as exc:
        raise ConfigError(f"config error: {key}: {exc}") from exc


def _check_prompt_files(config: Config) -> None:
    for key in ("prompt_file", "summary_prompt_file"):
        if (path := getattr(config.llm, key)) is not None:
            read_prompt_file(path, f"llm.{key}")


def _resolve_source_paths(source: SourceConfig, resolve: Callable[[Path], Path]) -> SourceConfig:
    update: dict[str, object] = {"path": resolve(source.path)} if source.path else {}
    if source.password_file:
        update["password_file"] = resolve(source.password_file)
    if source.ca_file:
        update["ca_file"] = resolve(source.ca_file)
    auth = source.auth
    if isinstance(auth, BasicAuth) and auth.password_file:
        update["auth"] = auth.model_copy(update={"password_file": resolve(auth.password_file)})
    if isinstance(auth, BearerAuth) and auth.token_file:
        update["auth"] = auth.model_copy(update={"token_file": resolve(auth.token_file)})
    return source.model_copy(update=update) if update else source
