"""Logging for the CLI and the daemon: one line per event, secrets masked, stderr or a file.

Nothing happens at import; the CLI calls `configure_logging` once it knows the config, with
the secret values it points at (fetch.access.config_secrets).
"""

from __future__ import annotations

import io
import logging
import re
import sys
from collections.abc import Iterable
from logging.handlers import RotatingFileHandler
from pathlib import Path

from digest.atomic import open_append
from digest.config import LogConfig
from digest.text import for_terminal
from digest.urls import for_display

MASK = "***"
FORMAT = "%(asctime)s %(levelname)s %(message)s"
_AUTH_HEADER = re.compile(
    r"(?i)\b(authorization|proxy-authorization)(['\"]?\s*[:=]\s*['\"]?)[^'\"\n,}]+"
)
_KEY_PARAM = re.compile(
    r"(?i)\b(api[_-]?key|access[_-]?token|token|password|secret)(['\"]?\s*[:=]\s*['\"]?)[^\s'\"&,}]+"
)
_BEARER = re.compile(r"(?i)\bbearer\s+[A-Za-z0-9._~+/=-]+")
_OPENAI_KEY = re.compile(r"\bsk-[A-Za-z0-9_-]{8,}")


def redact(text: str, secrets: Iterable[str] = ()) -> str:
    """`text` with URL credentials, auth headers, api keys and the given secret values masked."""
    for secret in secrets:
        if secret:
            text = text.replace(secret, MASK)
    text = for_display(text)
    text = _AUTH_HEADER.sub(rf"\1\2{MASK}", text)
    text = _KEY_PARAM.sub(rf"\1\2{MASK}", text)
    text = _BEARER.sub(f"Bearer {MASK}", text)
    return _OPENAI_KEY.sub(MASK, text)


class RedactingFilter(logging.Filter):
    """Masks secrets in a record's message (on one line, escaped as text.for_terminal
    escapes it) and in its traceback.

    Attach it to handlers: a handler's filters see every record it writes, also those
    propagated from other loggers, which a logger's filters do not.
    """

    def __init__(self, secrets: Iterable[str] = ()) -> None:
        super().__init__()
        self.secrets = tuple(secret for secret in secrets if secret)

    def filter(self, record: logging.LogRecord) -> bool:
        record.msg = for_terminal(" ".join(redact(record.getMessage(), self.secrets).split()))
        record.args = None
        if record.exc_info and not record.exc_text:
            record.exc_text = logging.Formatter().formatException(record.exc_info)
        if record.exc_text:
            record.exc_text = redact(record.exc_text, self.secrets)
        return True


class _OwnFileHandler(RotatingFileHandler):
    """A rotating log that opens its file as atomic.open_append does: no symbolic link."""

    def _open(self) -> io.TextIOWrapper:
        return open_append(Path(self.baseFilename))


def configure_logging(
    level: int, log_config: LogConfig | None = None, secrets: Iterable[str] = ()
) -> None:
    """Route the root logger to stderr, or to the rotating file of `[log] file`."""
    handler: logging.Handler
    if log_config is not None and log_config.file is not None:
        log_config.file.parent.mkdir(parents=True, exist_ok=True)
        handler = _OwnFileHandler(
            log_config.file,
            maxBytes=log_config.max_bytes,
            backupCount=log_config.backups,
            encoding="utf-8",
        )
    else:
        handler = logging.StreamHandler(sys.stderr)
    handler.setFormatter(logging.Formatter(FORMAT))
    handler.addFilter(RedactingFilter(secrets))
    logging.basicConfig(level=level, handlers=[handler], force=True)
