from __future__ import annotations

import logging
import shutil
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
from hypothesis import settings

from digest.errors import BUG_LOGGER

sys.path.insert(0, str(Path(__file__).parent))

from fake_openai import fake_openai  # noqa: E402, F401
from loopback import LoopbackServer, serving  # noqa: E402
from mailrig import hangup, sink, store  # noqa: E402, F401

# A property's examples are bounded by their count, not by wall time: on a busy 2-core CI
# machine one example of a fast property can take 400 ms, and a deadline there only flakes.
settings.register_profile("digest", deadline=None)
settings.load_profile("digest")


class _BugRecords(logging.Handler):
    def __init__(self) -> None:
        super().__init__(logging.ERROR)
        self.records: list[logging.LogRecord] = []

    def emit(self, record: logging.LogRecord) -> None:
        self.records.append(record)


@pytest.fixture(autouse=True)
def no_bug_logged(request: pytest.FixtureRequest) -> Iterator[None]:
    """A bug that a unit boundary kept from stopping a run (errors.unit_bug) fails the test,
    unless the test is marked `bug_expected`."""
    handler = _BugRecords()
    logger = logging.getLogger(BUG_LOGGER)
    logger.addHandler(handler)
    try:
        yield
    finally:
        logger.removeHandler(handler)
    if handler.records and request.node.get_closest_marker("bug_expected") is None:
        first = handler.records[0]
        pytest.fail(f"bug logged: {first.getMessage()}: {first.exc_info and first.exc_info[1]!r}")


@pytest.fixture(autouse=True)
def isolated(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """Every test runs in its own folder with no config, key or proxy from the environment,
    and a home of its own: nothing can read or write the real ~/.config or ~/.local."""
    home = tmp_path / "home"
    monkeypatch.setenv("HOME", str(home))
    for name, folder in (
        ("XDG_CONFIG_HOME", ".config"),
        ("XDG_DATA_HOME", ".local/share"),
        ("XDG_STATE_HOME", ".local/state"),
        ("XDG_CACHE_HOME", ".cache"),
    ):
        monkeypatch.setenv(name, str(home / folder))
    for name in (
        "DIGEST_CONFIG",
        "OPENAI_API_KEY",
        "OPENAI_BASE_URL",
        "DIGEST_SMTP_PASSWORD",
        "HTTP_PROXY",
        "HTTPS_PROXY",
        "ALL_PROXY",
        "http_proxy",
        "https_proxy",
        "all_proxy",
    ):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.chdir(tmp_path)
    return tmp_path


@pytest.fixture(scope="session")
def shared_server() -> Iterator[LoopbackServer]:
    with serving() as running:
        yield running


@pytest.fixture
def server(shared_server: LoopbackServer) -> LoopbackServer:
    """The test run's one loopback server (per xdist worker), reset for each test."""
    shared_server.reset()
    return shared_server


@pytest.fixture(scope="session")
def certificate(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    """A self-signed certificate for 127.0.0.1 and its key, made with the openssl command once
    per test process (a 2048-bit key takes a while to make)."""
    if shutil.which("openssl") is None:
        pytest.skip("needs the openssl command")
    folder = tmp_path_factory.mktemp("certificate")
    cert, key = folder / "cert.pem", folder / "key.pem"
    subprocess.run(
        ["openssl", "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-days", "1",
         "-keyout", str(key), "-out", str(cert), "-subj", "/CN=127.0.0.1",
         "-addext", "subjectAltName=IP:127.0.0.1"],
        check=True, capture_output=True,
    )  # fmt: skip
    return cert, key
