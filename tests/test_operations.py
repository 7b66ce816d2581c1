"""Operations: doctor, the lock through the CLI, status of deliveries, log redaction, stopping."""

from __future__ import annotations

import asyncio
import io
import logging
import sqlite3
import subprocess
import sys
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest
from aiosmtpd.controller import Controller
from click.testing import CliRunner, Result

from digest.cli import cli
from digest.clock import Waits
from digest.config import LogConfig, load_config
from digest.errors import RunCancelled
from digest.jobs import daemon_jobs
from digest.runtime.logs import configure_logging
from digest.runtime.progress import stage_progress
from fake_openai import FakeOpenAI
from loopback import LoopbackServer, Request, Response, free_port
from mailrig import HangUpServer, Sink

HOLD = """
import sys
from pathlib import Path
from digest.runtime.lock import run_lock
with run_lock(Path(sys.argv[1])):
    print("locked", flush=True)
    sys.stdin.readline()
"""


def invoke(config: Path, *args: str) -> Result:
    return CliRunner().invoke(cli, [*args, "--config", str(config)])


def write_config(tmp_path: Path, extra: str = "") -> Path:
    path = tmp_path / "digest.toml"
    path.write_text(f'[digest]\ndata_dir = "data"\n{extra}\n')
    return path


# -- digest doctor ----------------------------------------------------------------------------------


def test_doctor_says_ok_for_each_check_of_a_working_setup(tmp_path: Path) -> None:
    (tmp_path / "inbox").mkdir()  # with no source at all, doctor warns (test_setup.py)
    inbox = '[[sources]]\nname = "inbox"\nkind = "file"\npath = "inbox"\n'
    result = invoke(write_config(tmp_path, inbox), "doctor")
    assert result.exit_code == 0, result.output
    assert [line.split(":")[0] for line in result.output.splitlines()] == [
        "config",
        "data dir",
        "database",
        "sources",
        "network",
        "llm",
        "smtp",
    ]
    assert all(": ok (" in line for line in result.output.splitlines())


def test_doctor_names_each_problem_with_its_fix_and_exits_1(tmp_path: Path) -> None:
    plain = Controller(Sink(), hostname="127.0.0.1", port=free_port())
    plain.start()
    try:
        with FakeOpenAI() as fake:
            fake.script(FakeOpenAI.error(401, "Incorrect API key provided"))
            config = write_config(
                tmp_path,
                f'[llm]\nprovider = "openai"\nbase_url = "{fake.base_url}"\n'
                f'[email]\nenabled = true\nhost = "127.0.0.1"\nport = {plain.port}\n'
                'security = "starttls"\n',
            )
            (tmp_path / "data").mkdir()
            (tmp_path / "data" / "digest.db").write_bytes(b"not a database at all" * 100)
            result = invoke(config, "doctor")
    finally:
        plain.stop()
    assert result.exit_code == 1
    lines = dict(line.split(": ", 1) for line in result.output.splitlines())
    assert lines["config"].startswith("ok") and lines["data dir"].startswith("ok")
    assert lines["database"].startswith("problem: database") and "; fix: " in lines["database"]
    assert lines["llm"].startswith("problem: gpt-4o-mini at http://127.0.0.1:")
    assert "401" in lines["llm"] and "fix: check the key" in lines["llm"]
    assert "does not offer STARTTLS" in lines["smtp"]
    assert "fix: use security = 'ssl'" in lines["smtp"]


def test_doctor_checks_the_llm_with_one_tiny_call(tmp_path: Path) -> None:
    with FakeOpenAI() as fake:
        config = write_config(
            tmp_path, f'[llm]\nprovider = "openai"\nbase_url = "{fake.base_url}"\n'
        )
        result = invoke(config, "doctor")
        assert result.exit_code == 0, result.output
        [request] = fake.requests
    assert request["max_tokens"] == 1
    assert f"llm: ok (gpt-4o-mini at {fake.base_url} answered)" in result.output


def test_doctor_local_leaves_the_llm_and_mail_servers_alone(tmp_path: Path) -> None:
    with FakeOpenAI() as fake:
        config = write_config(
            tmp_path, f'[llm]\nprovider = "openai"\nbase_url = "{fake.base_url}"\n'
        )
        result = invoke(config, "doctor", "--local")
        assert result.exit_code == 0, result.output
        assert fake.requests == []
    assert "database: ok" in result.output
    assert "llm:" not in result.output and "smtp:" not in result.output


def test_doctor_reports_a_config_it_cannot_load(tmp_path: Path) -> None:
    config = write_config(tmp_path, "[email]\nport = 'twenty-five'\n")
    result = invoke(config, "doctor")
    assert result.exit_code == 1
    [line] = result.output.splitlines()
    assert line.startswith(f"config: problem: config error: {config}:4: email.port")


# -- the run lock, through the CLI ------------------------------------------------------------------


@pytest.fixture
def holder(tmp_path: Path) -> Iterator[subprocess.Popen[str]]:
    child = subprocess.Popen(
        [sys.executable, "-c", HOLD, str(tmp_path / "data")],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
    )
    assert child.stdout is not None and child.stdout.readline().strip() == "locked"
    yield child
    if child.stdin and not child.stdin.closed:
        child.stdin.close()
    child.wait(timeout=10)
    assert child.stdout is not None
    child.stdout.close()


def test_digest_now_while_another_run_holds_the_lock_says_so_in_one_line(
    tmp_path: Path, holder: subprocess.Popen[str]
) -> None:
    result = invoke(write_config(tmp_path), "now")
    assert result.exit_code == 1
    assert result.output.splitlines() == [
        f"digest: another digest run is in progress (pid {holder.pid}, started "
        + result.output.split("started ", 1)[1].split(")")[0]
        + "); try again later or pass --wait"
    ]


def test_digest_now_with_wait_runs_once_the_lock_is_free(
    tmp_path: Path, holder: subprocess.Popen[str]
) -> None:
    assert holder.stdin is not None
    threading.Timer(0.5, holder.stdin.close).start()
    result = invoke(write_config(tmp_path), "now", "--wait")
    assert result.exit_code == 0, result.output
    assert holder.stdin.closed  # it ran only after the holder was told to let go
    assert result.output.splitlines()[-1].endswith(".md")


# -- deliveries needing attention -------------------------------------------------------------------


def test_status_reports_an_unknown_delivery_and_what_to_do(
    tmp_path: Path, hangup: HangUpServer
) -> None:
    config = write_config(
        tmp_path,
        f'publish_empty = true\n[email]\nenabled = true\nhost = "127.0.0.1"\nport = {hangup.port}\n'
        'security = "none"\n',
    )
    assert invoke(config, "now", "--week", "2026-W47").exit_code == 3  # written, not delivered
    table = invoke(config, "status")
    assert "Deliveries needing attention" in table.output
    assert "unknown" in table.output and "resend" in table.output
    as_json = invoke(config, "status", "--json")
    [delivery] = load_json(as_json.output)["deliveries_needing_attention"]
    assert (delivery["period"], delivery["channel"], delivery["status"]) == (
        "2026-W47",
        "email",
        "unknown",
    )


def load_json(text: str) -> dict[str, list[dict[str, str]]]:
    import json

    data: dict[str, list[dict[str, str]]] = json.loads(text)
    return data


def test_resend_mails_the_week_again_and_says_so(tmp_path: Path, sink: tuple[Sink, int]) -> None:
    handler, port = sink
    config = write_config(
        tmp_path,
        f'publish_empty = true\n[email]\nenabled = true\nhost = "127.0.0.1"\nport = {port}\n'
        'security = "none"\n',
    )
    assert invoke(config, "now", "--week", "2026-W47").exit_code == 0
    result = invoke(config, "resend", "--week", "2026-W47")
    assert result.exit_code == 0, result.output
    assert result.output == "mailed 2026-W47 revision 1 to me@example.org\n"
    assert len(handler.envelopes) == 2


# -- logs -------------------------------------------------------------------------------------------


@pytest.fixture
def restored_logging() -> Iterator[None]:
    root = logging.getLogger()
    handlers, level = root.handlers[:], root.level
    yield
    for handler in root.handlers:
        handler.close()
    root.handlers, root.level = handlers, level


@pytest.mark.usefixtures("restored_logging")
def test_logs_mask_secrets_and_url_credentials_one_line_per_event(tmp_path: Path) -> None:
    log_file = tmp_path / "logs" / "digest.log"
    configure_logging(logging.INFO, LogConfig(file=log_file), secrets=["hunter2-smtp"])
    log = logging.getLogger("digest.test")
    log.warning("fetch failed: %s", "https://bob:pa55@feeds.example/x.xml: 401")
    log.info("headers {'Authorization': 'Bearer sk-abcdefgh12345678'}\nsecond line")
    log.info("login with hunter2-smtp refused; api_key=abc123")
    try:
        raise ValueError("token=xyz in https://u:p@h.example/")
    except ValueError:
        log.exception("crashed")
    text = log_file.read_text(encoding="utf-8")
    for secret in ("pa55", "bob:", "sk-abcdefgh", "hunter2-smtp", "abc123", "xyz", "u:p@"):
        assert secret not in text, secret
    assert "https://***@feeds.example/x.xml" in text
    lines = text.splitlines()
    assert lines[1].endswith("INFO headers {'Authorization': '***'} second line")
    assert "ValueError" in text


# -- stopping after the item in hand ----------------------------------------------------------------


@pytest.mark.slow
def test_a_stopped_daemon_job_ends_after_the_item_in_hand_and_the_next_run_goes_on(
    tmp_path: Path, server: LoopbackServer
) -> None:
    stop = threading.Event()

    def page(request: Request) -> Response:
        stop.set()  # SIGTERM arrives while the first pages are being fetched
        return Response(200, "<html><body><article><p>Some text.</p></article></body></html>")

    paths = [f"/p{n}" for n in range(8)]
    for path in paths:
        server.routes[path] = page
    (tmp_path / "links.txt").write_text("\n".join(server.url(p) for p in paths) + "\n")
    config_path = write_config(
        tmp_path,
        '[[sources]]\nname = "links"\nkind = "file"\npath = "links.txt"\n'
        '[fetch]\nallow_private_addresses = ["127.0.0.1/32"]\nper_host_concurrency = 1\n',
    )
    config = load_config(config_path)

    async def held_once_stopped(seconds: float) -> None:
        # the per-host delay (1 s, one page at a time) is not waited out: the next page
        # waits for ever once the daemon is stopping, not at all before
        if stop.is_set():
            await asyncio.Event().wait()

    async def no_wait(seconds: float) -> None:
        return None

    with pytest.raises(RunCancelled, match="fetch stopped after 1 of 8 items"):
        daemon_jobs(config, stop, waits=Waits(sleep=held_once_stopped)).collect()

    db = sqlite3.connect(tmp_path / "data" / "digest.db")
    assert db.execute("SELECT count(*) FROM items WHERE state != 'new'").fetchone() == (1,)
    assert db.execute("SELECT status FROM runs").fetchall() == [("cancelled",)]
    daemon_jobs(config, threading.Event(), waits=Waits(sleep=no_wait)).collect()
    assert db.execute("SELECT count(*) FROM items WHERE state = 'new'").fetchone() == (0,)


# -- progress ---------------------------------------------------------------------------------------


class Terminal(io.StringIO):
    def isatty(self) -> bool:
        return True


def test_progress_under_cron_is_a_few_plain_lines_per_stage() -> None:
    stream = io.StringIO()
    with stage_progress(stream) as progress:
        for done in range(1, 101):
            progress("fetch", done, 100)
        progress("notes", 1, 1)
    lines = stream.getvalue().splitlines()
    assert lines == [f"fetch: {n}/100" for n in range(10, 101, 10)] + ["notes: 1/1"]


def test_progress_at_a_terminal_draws_a_bar_per_stage() -> None:
    stream = Terminal()
    with stage_progress(stream) as progress:
        progress("collect", 1, 2)
        progress("fetch", 3, 7)
    drawn = stream.getvalue()
    assert "\x1b[" in drawn  # terminal control sequences: a live display
    assert "collect" in drawn and "3/7" in drawn
    assert "fetch: 3/7" not in drawn
