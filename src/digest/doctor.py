"""`digest doctor`: is this installation able to run? One line per check, with the fix.

Checks the config, the database, the data folder, the LLM endpoint and the SMTP
server, each with our own timeouts; it sends no mail and writes nothing but a
probe file. The config comes first: without it nothing else can be checked.
"""

from __future__ import annotations

import os
import tempfile
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path

import openai

from digest.config import Config, load_config
from digest.errors import DeliveryError, DigestError
from digest.smtp import check_server
from digest.store import open_store


@dataclass(frozen=True)
class Check:
    name: str
    ok: bool
    detail: str  # what was found
    fix: str = ""  # what to do, for a problem

    def line(self) -> str:
        if self.ok:
            return f"{self.name}: ok ({self.detail})"
        return f"{self.name}: problem: {self.detail}; fix: {self.fix}"


class Problem(Exception):
    def __init__(self, detail: str, fix: str):
        super().__init__(detail)
        self.detail, self.fix = detail, fix


def run_checks(config_path: Path | None, *, local: bool = False) -> Iterator[Check]:
    """Each check as it finishes; a config that does not load ends the list.

    `local` leaves out the LLM and SMTP servers: a health check that runs every few
    minutes must not spend tokens or open mail sessions.
    """
    try:
        config = load_config(config_path)
    except DigestError as exc:
        yield Check("config", False, str(exc), "correct the file at the place named")
        return
    where = str(config.path) if config.path else "built-in defaults"
    yield Check("config", True, where)
    checks: list[tuple[str, Callable[[Config], str]]] = [
        ("data dir", check_data_dir),
        ("database", check_database),
    ]
    if not local:
        checks += [("llm", check_llm), ("smtp", check_smtp)]
    for name, check in checks:
        try:
            yield Check(name, True, check(config))
        except Problem as problem:
            yield Check(name, False, problem.detail, problem.fix)


def check_data_dir(config: Config) -> str:
    folder = config.data_dir
    try:
        folder.mkdir(parents=True, exist_ok=True)
        with tempfile.NamedTemporaryFile(dir=folder, prefix=".doctor-"):
            pass
    except OSError as exc:
        raise Problem(
            f"{folder} is not writable ({exc.strerror or exc})",
            f"create it and give the user running digest (uid {os.getuid()}) write access",
        ) from exc
    return str(folder)


def check_database(config: Config) -> str:
    try:
        store = open_store(config.db_path)
    except DigestError as exc:
        raise Problem(str(exc), "restore the database from a backup, or move it aside") from exc
    try:
        problems = store.integrity_problems()
        items = store.count_items()
    except DigestError as exc:
        raise Problem(str(exc), "stop other digest processes and try again") from exc
    finally:
        store.close()
    if problems:
        raise Problem(
            f"{config.db_path} fails integrity_check: {problems[0]}",
            "restore it from a backup, or `sqlite3 digest.db .recover` into a new file",
        )
    return f"{config.db_path}, migrated, {items} items"


def check_llm(config: Config) -> str:
    llm = config.llm
    if llm.provider == "offline":
        return "offline summariser, no network needed"
    if llm.api_key is None and not llm.effective_base_url:
        raise Problem(
            f"no API key: ${llm.api_key_env} is not set",
            f"set {llm.api_key_env} in the environment, or base_url for a local server",
        )
    client = openai.OpenAI(
        api_key=llm.api_key or "not-needed",
        base_url=llm.effective_base_url,
        timeout=llm.timeout_s,
        max_retries=0,
    )
    try:
        client.chat.completions.create(
            model=llm.model, messages=[{"role": "user", "content": "ping"}], max_tokens=1
        )
    except openai.APIError as exc:
        raise Problem(
            f"{llm.model} at {_endpoint(config)}: {_api_error(exc)}", _llm_fix(exc)
        ) from exc
    finally:
        client.close()
    return f"{llm.model} at {_endpoint(config)} answered"


def _endpoint(config: Config) -> str:
    return config.llm.effective_base_url or "https://api.openai.com/v1"


def _api_error(exc: openai.APIError) -> str:
    status = getattr(exc, "status_code", None)
    message = " ".join(str(getattr(exc, "message", exc)).split())
    return f"{status} {message}" if status else message


def _llm_fix(exc: openai.APIError) -> str:
    if isinstance(exc, openai.AuthenticationError):
        return "check the key in the variable named by [llm] api_key_env"
    if isinstance(exc, openai.NotFoundError):
        return "set [llm] model to a model the server offers"
    if isinstance(exc, openai.APIConnectionError | openai.APITimeoutError):
        return "check [llm] base_url and that the server is up"
    return "see the server's message; `digest now` falls back to offline notes meanwhile"


def check_smtp(config: Config) -> str:
    email = config.email
    if not email.enabled:
        return "email disabled"
    try:
        return check_server(email)
    except DeliveryError as exc:
        raise Problem(str(exc), _smtp_fix(str(exc))) from exc


def _smtp_fix(message: str) -> str:
    if "STARTTLS" in message:
        return "use security = 'ssl' (usually port 465) or a server that offers STARTTLS"
    if "certificate" in message:
        return "point [email] ca_file at the server's certificate, or fix the server's certificate"
    if "password" in message or "login" in message:
        return "check [email] username and the variable named by password_env"
    return "check [email] host, port and security, and that the server is reachable"
