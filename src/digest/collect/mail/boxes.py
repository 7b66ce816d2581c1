"""The letters of a mail source: an IMAP folder (imap-tools), a Maildir or an mbox file.

Mailboxes are only read: an IMAP letter is fetched without setting \\Seen (BODY.PEEK), and
flagged or moved only when the source says so (mark_seen, move_to); Maildir and mbox files
are never written. An IMAP folder is read from the UID after the last one read, as long as
its UIDVALIDITY is the one recorded; the Message-IDs read keep every letter read once."""

from __future__ import annotations

import email
import imaplib
import mailbox
import os
import ssl
from collections.abc import Iterator
from contextlib import contextmanager, suppress
from dataclasses import dataclass
from email.message import Message
from pathlib import Path
from typing import TYPE_CHECKING

from digest.config import SourceConfig
from digest.errors import SourceError
from digest.userfiles import UserFileError, read_small_text, tls_context

if TYPE_CHECKING:  # imap-tools is imported when a mailbox is opened: not by every command
    from imap_tools import BaseMailBox

IMAP_TIMEOUT_S = 30.0
IMAP_BULK = 50  # letters fetched per IMAP command


@dataclass(frozen=True)
class Envelope:
    """One letter as the mailbox holds it: where (for a report line) and its message."""

    where: str  # "uid 42", a Maildir file's key, "message 3" of an mbox
    message: Message
    uid: int | None = None  # IMAP only


@dataclass
class ImapFolder:
    """Where an IMAP folder stands: its UIDVALIDITY and the last UID read in it."""

    uidvalidity: int
    last_uid: int


def file_letters(source: SourceConfig) -> Iterator[Envelope]:
    """Every letter of a Maildir folder or an mbox file; SourceError when it is not one."""
    path = source.path
    assert path is not None  # the config requires it
    box = _open_file_box(source, path)
    for key in box.iterkeys():
        try:
            raw = box.get_bytes(key)
        except (OSError, KeyError) as exc:  # removed or unreadable meanwhile
            raise SourceError(f"{source.name}: cannot read {key} in {path}: {exc}") from exc
        where = f"message {key}" if source.kind == "mbox" else f"{path.name}/{key}"
        yield Envelope(where, email.message_from_bytes(raw))


def _open_file_box(source: SourceConfig, path: Path) -> mailbox.Mailbox[mailbox.Message]:
    if not path.exists():
        raise SourceError(f"{source.name}: {path} does not exist; correct its path")
    try:
        if source.kind == "maildir":
            if not (path / "cur").is_dir() and not (path / "new").is_dir():
                raise SourceError(f"{source.name}: {path} is no Maildir (no cur/ or new/ in it)")
            return mailbox.Maildir(path, factory=None, create=False)
        if path.is_dir():
            raise SourceError(f"{source.name}: {path} is a folder, not an mbox file")
        return mailbox.mbox(path, factory=None, create=False)
    except (OSError, mailbox.Error) as exc:
        raise SourceError(f"{source.name}: cannot open {path}: {exc}") from exc


def mail_password(source: SourceConfig) -> str:
    """The source's IMAP password, from its environment variable or its file."""
    where = f"source {source.name!r}"
    if source.password_env is not None:
        value = os.environ.get(source.password_env, "")
        if not value:
            raise SourceError(f"{where}: the environment variable {source.password_env} is not set")
        return value
    assert source.password_file is not None  # the config requires one of them
    try:
        value = read_small_text(source.password_file, "a secret").strip()
    except UserFileError as exc:
        raise SourceError(f"{where}: password_file: {exc}") from exc
    if not value:
        raise SourceError(f"{where}: {source.password_file} is empty")
    return value


@contextmanager
def imap_session(source: SourceConfig) -> Iterator[BaseMailBox]:
    """Logged in to the source's server, its folder selected; SourceError in one line, naming
    the source, when the server cannot be reached or refuses the login."""
    assert source.host is not None and source.user is not None  # the config requires them
    password = mail_password(source)
    port = source.port or (993 if source.security == "ssl" else 143)
    at = f"{source.name}: IMAP {source.user}@{source.host}:{port}"
    from imap_tools.errors import ImapToolsError, MailboxLoginError

    try:
        box = _mailbox(source, port)
        box.login(source.user, password, initial_folder=None)
    except MailboxLoginError as exc:
        raise SourceError(f"{at}: login failed; check user and the password") from exc
    except ssl.SSLCertVerificationError as exc:
        raise SourceError(
            f"{at}: its certificate is not trusted ({exc.verify_message}); point the source's"
            " ca_file at the server's certificate, or fix the server's certificate"
        ) from exc
    except (OSError, imaplib.IMAP4.error, ImapToolsError) as exc:
        raise SourceError(f"{at}: cannot connect: {exc}") from exc
    try:
        yield box
    except (OSError, imaplib.IMAP4.error, ImapToolsError) as exc:
        raise SourceError(f"{at}: {exc}") from exc
    finally:
        with suppress(OSError, imaplib.IMAP4.error, ImapToolsError):
            box.logout()  # the session is over either way


def _mailbox(source: SourceConfig, port: int) -> BaseMailBox:
    from imap_tools import MailBox, MailBoxStartTls, MailBoxUnencrypted

    assert source.host is not None
    if source.security == "ssl":
        return MailBox(source.host, port, timeout=IMAP_TIMEOUT_S, ssl_context=_tls(source))
    if source.security == "starttls":
        context = _tls(source)
        return MailBoxStartTls(source.host, port, timeout=IMAP_TIMEOUT_S, ssl_context=context)
    return MailBoxUnencrypted(source.host, port, timeout=IMAP_TIMEOUT_S)


def _tls(source: SourceConfig) -> ssl.SSLContext:
    """Certificates checked (imaplib's default does not); `ca_file` trusted too."""
    try:
        return tls_context(source.ca_file)
    except UserFileError as exc:
        raise SourceError(f"source {source.name!r}: ca_file: {exc}") from exc


def imap_folder_state(box: BaseMailBox, folder: str) -> ImapFolder:
    status = box.folder.status(folder, ["UIDVALIDITY", "UIDNEXT"])
    return ImapFolder(int(status["UIDVALIDITY"]), int(status["UIDNEXT"]) - 1)


def imap_letters(box: BaseMailBox, folder: str, after_uid: int) -> Iterator[Envelope]:
    """The letters of `folder` with a UID above `after_uid`, without marking them seen."""
    from imap_tools import AND, U

    box.folder.set(folder, readonly=True)
    criteria = AND(uid=U(str(after_uid + 1), "*")) if after_uid else "ALL"
    for message in box.fetch(criteria, mark_seen=False, bulk=IMAP_BULK):
        uid = int(message.uid or 0)
        if uid > after_uid:  # "N:*" answers with the last letter even when its UID is below N
            yield Envelope(f"uid {uid}", message.obj, uid)


def imap_file_away(box: BaseMailBox, source: SourceConfig, uids: list[int]) -> None:
    """What the source asks done with the letters read: flagged seen, moved. Neither unless
    configured."""
    if not uids or not (source.mark_seen or source.move_to):
        return
    box.folder.set(source.folder)
    wanted = [str(uid) for uid in uids]
    if source.mark_seen:
        box.flag(wanted, "\\Seen", True)
    if source.move_to:
        box.move(wanted, source.move_to)


def imap_reachable(source: SourceConfig) -> str:
    """`digest doctor`'s look at an IMAP source: logged in and its folder found, in words;
    SourceError in one line, naming the source, otherwise."""
    with imap_session(source) as box:
        status = box.folder.status(source.folder, ["MESSAGES"])
    return f"logged in as {source.user}, {status['MESSAGES']} letters in {source.folder}"
