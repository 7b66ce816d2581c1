"""A real IMAP server for the newsletter tests: Debian's dovecot-imapd, started on a free
loopback port with a config written here, in a folder of its own, and stopped after.

Without dovecot the tests that need it skip, except under CI (`CI` set), where .ci/run
installs it and a skip would hide a missing install step."""

from __future__ import annotations

import grp
import os
import pwd
import shutil
import signal
import socket
import subprocess
import tempfile
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

import pytest
from imap_tools import MailBoxUnencrypted

from loopback import free_port

USER, PASSWORD = "reader", "letters-4-reader"
START_TIMEOUT_S = 15.0


@dataclass(frozen=True)
class Dovecot:
    port: int  # IMAP, with STARTTLS when started with a certificate
    folder: Path
    tls_port: int = 0  # IMAP over TLS (imaps), when started with a certificate

    def mailbox(self) -> MailBoxUnencrypted:
        box = MailBoxUnencrypted("127.0.0.1", self.port, timeout=10)
        box.login(USER, PASSWORD, initial_folder=None)
        return box

    def log(self) -> str:
        path = self.folder / "dovecot.log"
        return path.read_text(errors="replace") if path.exists() else ""


def dovecot_binary() -> str:
    found = shutil.which("dovecot") or next(
        (p for p in ("/usr/sbin/dovecot",) if os.access(p, os.X_OK)), None
    )
    if found is None:
        if os.environ.get("CI"):
            pytest.fail("dovecot is not installed: .ci/run installs dovecot-imapd")
        pytest.skip("needs Debian's dovecot-imapd (apt-get install dovecot-imapd)")
    return found


def _users() -> tuple[str, str, int, int]:
    """Who dovecot's processes and the mail run as: as root, Debian's own dovecot users
    (its login process refuses root, and mail may not belong to uid 0); otherwise us."""
    if os.geteuid() != 0:
        me = pwd.getpwuid(os.geteuid()).pw_name
        return me, me, os.geteuid(), os.getegid()
    try:
        owner = pwd.getpwnam("dovecot")
        pwd.getpwnam("dovenull")
    except KeyError:
        pytest.skip("dovecot's system users (dovecot, dovenull) are missing")
    return "dovecot", "dovenull", owner.pw_uid, owner.pw_gid


def _config(folder: Path, port: int, tls_port: int) -> str:
    internal, login, uid, gid = _users()
    group = grp.getgrgid(gid).gr_name
    tls = "ssl = no"
    if tls_port:  # the certificate and key copied into the folder by dovecot()
        tls = f"ssl = yes\nssl_cert = <{folder}/cert.pem\nssl_key = <{folder}/key.pem"
    return f"""
base_dir = {folder}/run
state_dir = {folder}/state
log_path = {folder}/dovecot.log
protocols = imap
listen = 127.0.0.1
{tls}
disable_plaintext_auth = no
auth_mechanisms = plain login
auth_failure_delay = 0
mail_location = maildir:{folder}/mail/%u
first_valid_uid = {uid}
last_valid_uid = {uid}
default_internal_user = {internal}
default_internal_group = {group}
default_login_user = {login}
service imap-login {{
  chroot =
  inet_listener imap {{
    address = 127.0.0.1
    port = {port}
  }}
  inet_listener imaps {{
    address = 127.0.0.1
    port = {tls_port}
  }}
}}
service anvil {{
  chroot =
}}
passdb {{
  driver = passwd-file
  args = scheme=PLAIN username_format=%u {folder}/passwd
}}
userdb {{
  driver = static
  args = uid={uid} gid={gid} home={folder}/home/%u
}}
"""


@contextmanager
def dovecot(certificate: tuple[Path, Path] | None = None) -> Iterator[Dovecot]:
    """A dovecot on loopback; with `certificate` (cert and key files), STARTTLS on its
    IMAP port and IMAP over TLS on a second one."""
    binary = dovecot_binary()
    # not below pytest's 0700 temporary folder: dovecot's own users must reach it
    folder = Path(tempfile.mkdtemp(prefix="digest-dovecot-"))
    folder.chmod(0o755)
    _, _, uid, gid = _users()
    for sub in ("mail", "home"):
        (folder / sub).mkdir()
        os.chown(folder / sub, uid, gid)
    (folder / "passwd").write_text(f"{USER}:{{PLAIN}}{PASSWORD}\n")
    port, tls_port = free_port(), 0
    if certificate is not None:
        tls_port = free_port()
        for source, name in zip(certificate, ("cert.pem", "key.pem"), strict=True):
            shutil.copyfile(source, folder / name)
    (folder / "dovecot.conf").write_text(_config(folder, port, tls_port))
    errors = folder / "start.err"
    with errors.open("wb") as stderr:  # not a pipe: the daemon keeps it open
        started = subprocess.run(
            [binary, "-c", str(folder / "dovecot.conf")],
            stdin=subprocess.DEVNULL,
            stdout=subprocess.DEVNULL,
            stderr=stderr,
            timeout=START_TIMEOUT_S,
        )
    server = Dovecot(port, folder, tls_port)
    try:
        if started.returncode != 0:
            pytest.fail(f"dovecot did not start: {errors.read_text(errors='replace')}")
        _wait_for(server)
        yield server
    finally:
        _stop(folder)
        shutil.rmtree(folder, ignore_errors=True)


def _wait_for(server: Dovecot) -> None:
    deadline = time.monotonic() + START_TIMEOUT_S
    while time.monotonic() < deadline:
        try:
            with socket.create_connection(("127.0.0.1", server.port), timeout=1) as conn:
                if conn.recv(64).startswith(b"* OK"):
                    return
        except OSError:
            time.sleep(0.1)
    pytest.fail(f"dovecot did not answer on port {server.port}: {server.log()[-2000:]}")


def _stop(folder: Path) -> None:
    pid_file = folder / "run" / "master.pid"
    try:
        pid = int(pid_file.read_text().strip())
    except (OSError, ValueError):
        return
    try:
        os.kill(pid, signal.SIGTERM)
    except ProcessLookupError:
        return
    deadline = time.monotonic() + 10
    while time.monotonic() < deadline:
        try:
            os.kill(pid, 0)
        except ProcessLookupError:
            return
        time.sleep(0.05)
