"""Text that deceives: bidi, zero-width and control characters never reach a reader, a host
mixing scripts is shown in punycode, and a CSV cell is never a formula."""

from __future__ import annotations

import csv
import io
import re
import sqlite3
from email.message import Message
from pathlib import Path

import pytest
from click.testing import CliRunner, Result
from hypothesis import given
from hypothesis import strategies as st

from digest.cli import cli
from digest.commands.export import csv_cell
from digest.text import clean, url_title
from loopback import LoopbackServer, Response
from mailrig import Sink

HIDDEN = re.compile(
    "[\x00-\x08\x0b-\x1f\x7f-\x9f\u061c\u200b-\u200f\u202a-\u202e\u2060-\u2069\ufeff]"
)


@pytest.mark.parametrize(
    ("text", "cleaned"),
    [
        ("Invoice \u202eexe.pdf", "Invoice exe.pdf"),
        ("Invoice &#x202E;exe.pdf &#8238;&rlm;&zwj;", "Invoice exe.pdf "),
        ("zero\u200bwidth\ufeff \u2066isolate\u2069", "zerowidth isolate"),
        ("bell\x07 esc\x1b[31m nul\x00 c1\x85 tab\tline\r\n", "bell esc[31m nul c1 tab\tline\n"),
        ("AT&amp;T &#65; &copy; & more", "AT&amp;T &#65; &copy; & more"),
        ("&&#x202E;#x202E;x &\u202e#8238;y", "x y"),
    ],
)
def test_one_cleaner_drops_what_a_reader_cannot_see(text: str, cleaned: str) -> None:
    assert clean(text) == cleaned


@pytest.mark.slow
@given(st.text())
def test_cleaned_text_holds_no_hidden_character_and_is_stable(text: str) -> None:
    cleaned = clean(text)
    assert not HIDDEN.search(cleaned.replace("\t", " ").replace("\n", " "))
    assert clean(cleaned) == cleaned


@pytest.mark.parametrize(
    ("value", "cell"),
    [
        ('=HYPERLINK("http://evil.test","x")', '\'=HYPERLINK("http://evil.test","x")'),
        ("+cmd|' /C calc'!A0", "'+cmd|' /C calc'!A0"),
        ("-2+3", "'-2+3"),
        ("@SUM(1,2)", "'@SUM(1,2)"),
        ("\tx", "'\tx"),
        ("\u202e=1+1", "'=1+1"),
        ("A = B", "A = B"),
        (7, 7),
    ],
)
def test_csv_cells_are_never_formulas(value: object, cell: object) -> None:
    assert csv_cell(value) == cell


def page(title: str) -> str:
    body = "".join(f"<p>{title} sentence {n} says something worth keeping.</p>" for n in range(10))
    return f"<html><head><title>{title}</title></head><body><article>{body}</article></body></html>"


def mail_text(message: Message) -> str:
    parts = [part.get_payload(decode=True) for part in message.walk() if not part.is_multipart()]
    bodies = "".join(part.decode() for part in parts if isinstance(part, bytes))
    return str(message["Subject"]) + bodies


def test_hidden_characters_reach_no_output_and_csv_cells_are_neutralised(
    tmp_path: Path, sink: tuple[Sink, int], server: LoopbackServer
) -> None:
    mailbox, smtp_port = sink
    base = f"http://127.0.0.1:{server.port}"
    server.routes["/raw"] = Response(200, page("Invoice \u202eexe.pdf"))
    server.routes["/entity"] = Response(200, page("Invoice &#x202E;fdp.exe&#x200B;"))
    config = tmp_path / "digest.toml"
    config.write_text(
        '[digest]\ndata_dir = "data"\n\n'
        '[fetch]\nallow_private_addresses = ["127.0.0.1/32"]\nper_host_delay_s = 0\n\n'
        f'[email]\nenabled = true\nhost = "127.0.0.1"\nport = {smtp_port}\n'
        'security = "none"\nsend = "every_revision"\n\n[output]\nnotes_dir = "data/notes"\n'
    )
    runner = CliRunner()

    def run(*args: str) -> Result:
        return runner.invoke(cli, [*args, "--config", str(config)], catch_exceptions=False)

    added = [
        run("add", f"{base}/raw"),
        run("add", f"{base}/entity"),
        run("add", f"{base}/titled", "--title", '=HYPERLINK("x")\x1b]0;pwn\x07 \u2066ok'),
        run("add", f"{base}/at", "--title", "@SUM(1)", "--note", "note\u202e\x00 here"),
    ]
    assert all(result.exit_code == 0 for result in added), [r.output for r in added]
    outputs = [run("now", "--week", "this"), run("status"), run("export")]
    exported = run("export", "--format", "csv")
    data = tmp_path / "data"
    with sqlite3.connect(data / "digest.db") as db:
        rows = db.execute(
            "SELECT title, extracted_title, context, text FROM items"
            " UNION ALL SELECT summary, key_points, tags, NULL FROM notes"
        ).fetchall()
    texts = {
        "stdout": "".join(r.output for r in outputs) + exported.output,
        "database": "".join(str(value) for row in rows for value in row if value),
        "files": "".join(p.read_text() for p in data.rglob("*") if p.suffix in (".md", ".xml")),
        "mail": "".join(mail_text(message) for message in mailbox.messages()),
    }
    assert "Invoice exe.pdf" in texts["database"] and "Invoice fdp.exe" in texts["database"]
    assert "Invoice exe.pdf" in texts["files"] and "Invoice exe.pdf" in texts["mail"], outputs[
        0
    ].output
    for where, text in texts.items():
        found = HIDDEN.findall(text.replace("\t", " ").replace("\n", " ").replace("\r", " "))
        assert not found, f"{found} in {where}"
        assert "&#x202E;" not in text, where
    cells = [row["title"] for row in csv.DictReader(io.StringIO(exported.output))]
    assert '\'=HYPERLINK("x")]0;pwn ok' in cells and "'@SUM(1)" in cells


def test_a_link_named_by_its_address_shows_no_lookalike_host_or_token() -> None:
    assert (
        url_title("https://p\u0430ypal.com/login?token=abc") == "xn--pypal-4ve.com/login?token=***"
    )
