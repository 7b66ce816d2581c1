"""Small texts a user hands over by path (prompt files, templates, mail passwords, the SMTP
certificate): a FIFO, a device or a huge file fails at once, in one line naming the file,
instead of hanging or swelling the run. Each FIFO case is run in a thread given a few
seconds: were it to block, the test unblocks it (a writer opens and closes the FIFO) and fails.
"""

from __future__ import annotations

import os
import threading
from collections.abc import Callable
from pathlib import Path

import pytest

from digest.collect.mail.boxes import mail_password
from digest.compose.usertemplates import render
from digest.config import load_config, parse_config
from digest.deliver.mail import connect
from digest.errors import ConfigError, DeliveryError, SourceError
from digest.notes.prompts import PromptProblem, check_prompt_files, prompt_version
from mailrig import make_config

SECONDS = 10


def within_seconds(work: Callable[[], object], fifo: Path) -> BaseException | object:
    """What `work` raised or returned, or an AssertionError when it blocked on `fifo`."""
    outcome: list[BaseException | object] = []

    def run() -> None:
        try:
            outcome.append(work())
        except BaseException as exc:  # the outcome under test
            outcome.append(exc)

    thread = threading.Thread(target=run, daemon=True)
    thread.start()
    thread.join(SECONDS)
    if thread.is_alive():
        os.close(os.open(fifo, os.O_WRONLY | os.O_NONBLOCK))  # EOF for the blocked reader
        thread.join(SECONDS)
        raise AssertionError(f"blocked on the FIFO {fifo}")
    return outcome[0]


def test_a_prompt_file_that_is_a_fifo_is_a_config_error_at_once(tmp_path: Path) -> None:
    os.mkfifo(tmp_path / "note.j2")

    raised = within_seconds(
        lambda: parse_config('[llm]\nprompt_file = "note.j2"\n', tmp_path / "digest.toml"),
        tmp_path / "note.j2",
    )

    assert isinstance(raised, ConfigError)
    assert str(raised).startswith(f"config error: llm.prompt_file: {tmp_path / 'note.j2'}")
    assert "is not a regular file (a FIFO, device or folder)" in str(raised)


@pytest.mark.parametrize("path", ["/dev/null", "big.j2"])
def test_a_device_or_a_huge_prompt_file_is_refused_without_reading_it(
    tmp_path: Path, path: str
) -> None:
    (tmp_path / "big.j2").write_text("{{ text }}\n" * 100_000)

    with pytest.raises(ConfigError) as raised:
        parse_config(f'[llm]\nsummary_prompt_file = "{path}"\n', tmp_path / "digest.toml")

    message = str(raised.value)
    assert message.startswith("config error: llm.summary_prompt_file: ")
    assert "/dev/null is not a regular file" in message or "big.j2 is over 64 KB" in message


def test_a_prompt_file_swapped_for_a_fifo_after_the_load_falls_back_to_the_built_in(
    tmp_path: Path,
) -> None:
    prompt = tmp_path / "note.j2"
    prompt.write_text("Note this: {{ text }}\n")
    config = parse_config('[llm]\nprompt_file = "note.j2"\n', tmp_path / "digest.toml")
    prompt.unlink()
    os.mkfifo(prompt)

    version = within_seconds(lambda: prompt_version(config.llm), prompt)
    problem = within_seconds(lambda: check_prompt_files(config.llm), prompt)

    assert isinstance(version, str)
    assert isinstance(problem, PromptProblem)
    assert f"{prompt} is not a regular file" in str(problem)
    assert str(problem).endswith("the built-in prompt is used")


@pytest.mark.parametrize("kind", ["fifo", "huge", "included fifo"])
def test_a_template_that_is_a_fifo_or_huge_costs_only_its_look(tmp_path: Path, kind: str) -> None:
    folder = tmp_path / "templates"
    folder.mkdir()
    culprit = folder / ("part.j2" if kind == "included fifo" else "digest.md.j2")
    if kind == "huge":
        culprit.write_text("# {{ title }}\n" * 100_000)
    else:
        os.mkfifo(culprit)
    if kind == "included fifo":
        (folder / "digest.md.j2").write_text('# mine\n{% include "part.j2" %}\n')

    rendered = within_seconds(
        lambda: render("digest.md.j2", {"title": "t"}, folder, lambda: "built-in"), culprit
    )

    assert getattr(rendered, "text", None) == "built-in"
    problem = getattr(rendered, "problem", None) or ""
    assert problem.startswith(f"template error: {culprit} ")
    assert ("is over 64 KB" if kind == "huge" else "is not a regular file (a FIFO") in problem
    assert problem.endswith("the built-in digest.md.j2 was used")


def test_a_mailbox_password_file_that_is_a_fifo_fails_that_source_at_once(
    tmp_path: Path,
) -> None:
    os.mkfifo(tmp_path / "password")
    config = parse_config(
        '[[sources]]\nname = "mailbox"\nkind = "imap"\nhost = "127.0.0.1"\nuser = "me"\n'
        'password_file = "password"\nfolder = "INBOX"\n',
        tmp_path / "digest.toml",
    )

    raised = within_seconds(lambda: mail_password(config.sources[0]), tmp_path / "password")

    assert isinstance(raised, SourceError)
    assert str(raised).startswith("source 'mailbox': password_file: ")
    assert "password is not a regular file (a FIFO" in str(raised)


def test_an_smtp_certificate_file_that_is_a_fifo_fails_the_delivery_at_once(
    tmp_path: Path,
) -> None:
    os.mkfifo(tmp_path / "ca.pem")
    config = make_config(tmp_path, 1, security="ssl", ca_file=tmp_path / "ca.pem")

    raised = within_seconds(lambda: connect(config.email), tmp_path / "ca.pem")

    assert isinstance(raised, DeliveryError)
    assert str(raised).startswith(f"[email] ca_file: {tmp_path / 'ca.pem'} is not a regular file")


@pytest.mark.parametrize("kind", ["fifo", "device"])
def test_a_config_that_is_a_fifo_or_a_device_is_a_config_error_at_once(
    tmp_path: Path, kind: str
) -> None:
    path = tmp_path / "digest.toml"
    if kind == "fifo":
        os.mkfifo(path)
    else:
        path.symlink_to("/dev/null")

    raised = within_seconds(lambda: load_config(path), path)

    assert isinstance(raised, ConfigError)
    assert str(raised) == (
        f"config error: {path} is not a regular file (a FIFO, device or folder):"
        " point it at a config file"
    )
