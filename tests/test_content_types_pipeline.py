"""Content types through the whole run: served by a loopback server, fetched, extracted, exported.

(The arXiv and GitHub readers key on their real hosts, which a loopback test cannot
serve without DNS; they are tested on bytes in test_extract_sites.py.)
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from click.testing import CliRunner

from digest.cli import cli
from loopback import LoopbackServer, Response
from test_extract import minimal_pdf

LATIN1_PAGE = (
    "<html><head><meta http-equiv='Content-Type' content='text/html; charset=iso-8859-1'>"
    "<title>Café Müller</title></head><body><article><h1>Café Müller</h1>"
    + "".join(
        f"<p>Im Café Müller in Köln trifft man sich seit Jahren zum Frühstück, Absatz {n}.</p>"
        for n in range(8)
    )
    + "</article></body></html>"
)


def test_pdf_latin1_and_binary_pages_come_out_right_through_a_run(
    tmp_path: Path, server: LoopbackServer
) -> None:
    server.routes["/paper.pdf"] = Response(
        200,
        minimal_pdf("Attention is all you need: a one-page paper about transformer models."),
        content_type="application/pdf",
    )
    server.routes["/cafe"] = Response(200, LATIN1_PAGE.encode("latin-1"), content_type="text/html")
    server.routes["/photo"] = Response(
        200, b"\x89PNG\r\n\x1a\n" + b"\0" * 64, content_type="image/png"
    )
    rows = run_and_export(
        tmp_path, [server.url(path) for path in ("/paper.pdf", "/cafe", "/photo")]
    )

    assert "Attention is all you need" in (rows["paper.pdf"]["text"] or ""), {
        k: rows["paper.pdf"][k] for k in ("state", "error")
    }
    assert "Café Müller in Köln" in rows["cafe"]["text"]
    assert rows["photo"]["state"] == "failed" and "image/png" in rows["photo"]["error"]
    assert rows["photo"]["note"] is None  # kept; only its address was saved: no pretend note
    assert rows["photo"]["basis"] == "saved context"


def test_a_utf8_page_its_server_calls_latin1_is_stored_and_exported_as_utf8(
    tmp_path: Path, server: LoopbackServer
) -> None:
    # A server's default charset left unchanged: the header says iso-8859-1, the bytes
    # (and the page's own <meta>) are UTF-8. Read as Latin-1, "’" would become "â€™".
    # No "”": its UTF-8 bytes hold 0x9D, undefined in windows-1252, which would make the
    # declared charset fail and hide the fault.
    page = (
        "<html><head><meta charset='utf-8'><title>Crème brûlée</title></head><body><article>"
        + "".join(
            f"<p>The chef’s crème brûlée — perfect, said the jury in Zürich, round {n}.</p>"
            for n in range(8)
        )
        + "</article></body></html>"
    )
    server.routes["/dessert"] = Response(
        200, page.encode(), content_type="text/html; charset=iso-8859-1"
    )

    row = run_and_export(tmp_path, [server.url("/dessert")])["dessert"]

    assert "The chef’s crème brûlée — perfect, said the jury in Zürich" in row["text"]
    assert "â€" not in row["text"]


def test_a_page_declaring_its_charset_after_kilobytes_of_script_is_read_in_it(
    tmp_path: Path, server: LoopbackServer
) -> None:
    # No charset in the header; the page's <meta> comes after 5 KB of inline script, as on
    # pages whose head is mostly scripts and styles (browsers honour it there too).
    script = (
        "<script>var settings = {" + ", ".join(f"k{n}: {n}" for n in range(700)) + "};</script>"
    )
    page = (
        f"<html><head>{script}<meta http-equiv='Content-Type' content='text/html; "
        "charset=windows-1251'><title>Новости</title></head><body><article>"
        + "".join(
            f"<p>Вчера в Москве открылась новая библиотека для детей и взрослых, часть {n}.</p>"
            for n in range(8)
        )
        + "</article></body></html>"
    )
    assert page.index("charset=windows-1251") > 4096
    server.routes["/news"] = Response(200, page.encode("cp1251"), content_type="text/html")

    row = run_and_export(tmp_path, [server.url("/news")])["news"]

    assert "Вчера в Москве открылась новая библиотека" in row["text"]


def run_and_export(tmp_path: Path, urls: list[str]) -> dict[str, Any]:
    """`digest now` with `urls` in an inbox file, then `digest export`: rows by URL's last part."""
    (tmp_path / "inbox").mkdir()
    (tmp_path / "inbox" / "links.txt").write_text("\n".join(urls) + "\n")
    config = tmp_path / "digest.toml"
    config.write_text(
        '[digest]\ndata_dir = "data"\n\n[[sources]]\nname = "inbox"\nkind = "file"\n'
        'path = "inbox"\n\n[fetch]\nallow_private_addresses = ["127.0.0.1/32"]\n'
        "per_host_delay_s = 0\n"
    )
    runner = CliRunner()
    run = runner.invoke(cli, ["now", "--config", str(config)])
    assert run.exit_code == 0, run.output
    exported = runner.invoke(cli, ["export", "--config", str(config)])
    return {
        row["url"].rsplit("/", 1)[1]: row for row in map(json.loads, exported.stdout.splitlines())
    }
