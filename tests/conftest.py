from __future__ import annotations

import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).parent))

from fake_openai import fake_openai  # noqa: E402, F401
from loopback import LoopbackServer, serving  # noqa: E402


@pytest.fixture(autouse=True)
def isolated(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """Every test runs in its own folder with no config, key or proxy from the environment."""
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


@pytest.fixture
def server() -> Iterator[LoopbackServer]:
    with serving() as running:
        yield running
