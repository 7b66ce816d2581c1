"""Newsletters over TLS from a real IMAP server (dovecot on loopback with a self-signed
certificate made for the test): IMAP over TLS and STARTTLS read the letters when the source's
ca_file trusts the certificate; without it the certificate is refused, in one line naming the
source."""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest
from click.testing import CliRunner, Result

from digest.cli import cli
from imaprig import PASSWORD, USER, Dovecot, dovecot
from letters import mailbox_letters
from loopback import LoopbackServer
from test_newsletters import serve


@pytest.fixture(scope="module")
def tls_server(certificate: tuple[Path, Path]) -> Iterator[Dovecot]:
    with dovecot(certificate) as server:
        yield server


@pytest.fixture
def folder(tls_server: Dovecot, server: LoopbackServer) -> str:
    """A folder of its own holding the sample letters, on the module's one server."""
    name = f"News-{uuid.uuid4().hex[:8]}"
    with tls_server.mailbox() as box:
        box.folder.create(name)
        for raw in mailbox_letters(serve(server)):
            box.append(raw, name, flag_set=())
    return name


def collect(tmp_path: Path, server: Dovecot, folder: str, tls: str) -> Result:
    (tmp_path / "password").write_text(PASSWORD)
    config = tmp_path / "digest.toml"
    config.write_text(
        f'[digest]\ndata_dir = "data"\ntimezone = "UTC"\n\n[[sources]]\nname = "mailbox"\n'
        f'kind = "imap"\nhost = "127.0.0.1"\nuser = "{USER}"\npassword_file = "password"\n'
        f'folder = "{folder}"\n{tls}\n\n[fetch]\nallow_private_addresses = ["127.0.0.1/32"]\n'
    )
    return CliRunner().invoke(cli, ["collect", "--config", str(config)], catch_exceptions=False)


@pytest.mark.parametrize("security", ["ssl", "starttls"])
def test_letters_are_read_over_tls_from_a_server_the_ca_file_trusts(
    tmp_path: Path, tls_server: Dovecot, folder: str, certificate: tuple[Path, Path], security: str
) -> None:
    port = tls_server.tls_port if security == "ssl" else tls_server.port
    tls = f'security = "{security}"\nport = {port}\nca_file = "{certificate[0]}"'

    result = collect(tmp_path, tls_server, folder, tls)

    assert result.exit_code == 0, result.output
    assert "mailbox: 4 new letters" in result.output


def test_a_server_whose_certificate_is_not_trusted_is_refused_in_one_line(
    tmp_path: Path, tls_server: Dovecot, folder: str
) -> None:
    result = collect(tmp_path, tls_server, folder, f"port = {tls_server.tls_port}")

    [line] = [row for row in result.output.splitlines() if "mailbox" in row]
    assert line.endswith(
        f"mailbox: IMAP {USER}@127.0.0.1:{tls_server.tls_port}: its certificate is not trusted"
        " (self-signed certificate); point the source's ca_file at the server's certificate,"
        " or fix the server's certificate"
    )
