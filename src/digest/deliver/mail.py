"""Sending one message over SMTP: verified TLS, no password in clear, our timeouts.

Errors are classified for the caller: `SmtpReplyError` carries the server's reply
code (4xx: try again later, 5xx: refused), `DeliveryUnknown` means the connection
dropped after the whole message went out and before the server's final reply.
"""

from __future__ import annotations

import re
import smtplib
import socket
import ssl
from email.message import EmailMessage
from email.policy import SMTP as SMTP_POLICY

from digest.config import EmailConfig
from digest.errors import DeliveryError
from digest.userfiles import UserFileError, tls_context

NO_STARTTLS = "use security = 'ssl' (usually port 465) or a server that offers STARTTLS"
UNTRUSTED_CERTIFICATE = (
    "point [email] ca_file at the server's certificate, or fix the server's certificate"
)
CREDENTIALS = "check [email] username and the variable named by password_env"
UNREACHABLE = "check [email] host, port and security, and that the server is reachable"


class DeliveryUnknown(DeliveryError):
    """The connection dropped after the message was sent but before the server's final reply."""


END_OF_DATA = "end of DATA"


class SmtpReplyError(DeliveryError):
    """The server answered with an error code: 4xx is transient, 5xx is a refusal."""

    def __init__(self, message: str, code: int, *, fix: str | None = None, step: str = ""):
        super().__init__(message, fix=fix)
        self.code = code
        self.step = step  # the command answered: "RCPT TO a@b.test", END_OF_DATA

    @property
    def transient(self) -> bool:
        return 400 <= self.code < 500

    @property
    def too_large(self) -> bool:
        """552 to the message itself: a smaller one may pass."""
        return self.code == 552 and self.step == END_OF_DATA


def send_email(message: EmailMessage, config: EmailConfig) -> dict[str, str]:
    """Send over SMTP as configured, to every recipient the server accepts; the refused
    ones, each with the server's answer ("550 no such user"). Raises when nobody got it;
    the error names the server and what went wrong."""
    where = f"mail to smtp://{config.host}:{config.port} failed"
    try:
        return _send(message, config)
    except SmtpReplyError as exc:
        raise SmtpReplyError(f"{where}: {exc}", exc.code, step=exc.step) from exc
    except DeliveryUnknown as exc:
        raise DeliveryUnknown(f"{where}: {exc}") from exc
    except DeliveryError as exc:
        raise DeliveryError(f"{where}: {exc}") from exc
    except smtplib.SMTPResponseException as exc:
        raise SmtpReplyError(f"{where}: {reason(exc, config)}", exc.smtp_code) from exc
    except (smtplib.SMTPException, OSError) as exc:
        raise DeliveryError(f"{where}: {reason(exc, config)}") from exc


def check_server(config: EmailConfig) -> str:
    """Connect, greet, STARTTLS and log in as configured, send nothing; what was checked.

    Raises DeliveryError like send_email.
    """
    where = f"smtp://{config.host}:{config.port}"
    try:
        smtp = connect(config)
        try:
            authenticate(smtp, config)
        finally:
            _close(smtp)
    except DeliveryError as exc:
        raise DeliveryError(f"{where}: {exc}", fix=exc.fix) from exc
    except (smtplib.SMTPException, OSError) as exc:
        raise DeliveryError(f"{where}: {reason(exc, config)}", fix=fix_for(exc)) from exc
    login = f", logged in as {config.username!r}" if config.username else ""
    return f"{where} answered ({config.security}{login})"


def _send(message: EmailMessage, config: EmailConfig) -> dict[str, str]:
    smtp = connect(config)
    try:
        authenticate(smtp, config)
        return _transmit(smtp, message, config)
    finally:
        _close(smtp)


def connect(config: EmailConfig) -> smtplib.SMTP:
    """An SMTP session past EHLO, on verified TLS unless security = 'none'."""
    if config.security == "ssl":
        context = _tls_context(config)
        return smtplib.SMTP_SSL(config.host, config.port, timeout=config.timeout_s, context=context)
    smtp = smtplib.SMTP(config.host, config.port, timeout=config.timeout_s)
    try:
        smtp.ehlo()
        if config.security == "starttls":
            if not smtp.has_extn("starttls"):
                raise DeliveryError(
                    "the server does not offer STARTTLS (security = 'starttls')", fix=NO_STARTTLS
                )
            smtp.starttls(context=_tls_context(config))
            smtp.ehlo()
    except BaseException:
        smtp.close()
        raise
    return smtp


def _tls_context(config: EmailConfig) -> ssl.SSLContext:
    """Certificate and host name verified; `ca_file` adds a trusted (self-signed) certificate."""
    try:
        return tls_context(config.ca_file)
    except UserFileError as exc:
        raise DeliveryError(f"[email] ca_file: {exc}") from exc


def authenticate(smtp: smtplib.SMTP, config: EmailConfig) -> None:
    if not config.username:
        return
    if config.security == "none":
        raise DeliveryError(
            "refusing to send the password without TLS (security = 'none')", fix=CREDENTIALS
        )
    password = config.password
    if password is None:
        raise DeliveryError(f"no SMTP password: set ${config.password_env}", fix=CREDENTIALS)
    try:
        smtp.login(config.username, password)
    except smtplib.SMTPAuthenticationError as exc:
        raise SmtpReplyError(
            f"login as {config.username!r} refused ({exc.smtp_code})",
            exc.smtp_code,
            fix=CREDENTIALS,
        ) from exc


def _transmit(smtp: smtplib.SMTP, message: EmailMessage, config: EmailConfig) -> dict[str, str]:
    """MAIL, RCPT and DATA by hand, so that a drop after the body was sent is told apart;
    a refused recipient does not stop the others. The refused ones, as send_email says."""
    smtp.ehlo_or_helo_if_needed()
    _expect(smtp.mail(config.sender), (250,), "MAIL FROM")
    refused = {}
    for recipient in config.to:
        code, text = smtp.rcpt(recipient)
        if code not in (250, 251):
            refused[recipient] = (code, text)
    if len(refused) == len(config.to):  # nobody to send to: the first refusal says why
        recipient, reply = next(iter(refused.items()))
        _expect(reply, (250, 251), f"RCPT TO {recipient}")
    _expect(smtp.docmd("DATA"), (354,), "DATA")
    try:
        smtp.send(_dot_stuffed(message.as_bytes(policy=SMTP_POLICY)))
        reply = smtp.getreply()
    except (smtplib.SMTPServerDisconnected, OSError) as exc:
        raise DeliveryUnknown(
            f"connection lost after the message was sent ({reason(exc, config)});"
            " outcome unknown, not resent"
        ) from exc
    _expect(reply, (250,), END_OF_DATA)
    return {
        to: f"{code} {one_line(text.decode('utf-8', 'replace'))}"
        for to, (code, text) in refused.items()
    }


def _expect(reply: tuple[int, bytes], codes: tuple[int, ...], step: str) -> None:
    code, text = reply
    if code not in codes:
        answer = one_line(text.decode("utf-8", "replace"))
        raise SmtpReplyError(f"{step} answered {code} {answer}", code, step=step)


def _dot_stuffed(data: bytes) -> bytes:
    data = re.sub(rb"(?m)^\.", b"..", data)
    if not data.endswith(b"\r\n"):
        data += b"\r\n"
    return data + b".\r\n"


def _close(smtp: smtplib.SMTP) -> None:
    try:
        smtp.quit()
    except (smtplib.SMTPException, OSError):
        smtp.close()


def reason(exc: BaseException, config: EmailConfig) -> str:
    if isinstance(exc, smtplib.SMTPResponseException):
        error = exc.smtp_error
        text = error.decode("utf-8", "replace") if isinstance(error, bytes) else str(error)
        return f"{exc.smtp_code} {one_line(text)}"
    if isinstance(exc, ssl.SSLCertVerificationError):
        return f"TLS certificate not trusted: {exc.verify_message}"
    if isinstance(exc, TimeoutError | socket.timeout):
        return f"no answer within {config.timeout_s:g}s"
    if isinstance(exc, ConnectionRefusedError):
        return "connection refused"
    if isinstance(exc, socket.gaierror):
        return f"cannot resolve {config.host!r}"
    return one_line(str(exc)) or type(exc).__name__


def fix_for(exc: BaseException) -> str:
    """What to do about a failure to reach or talk to the server."""
    if isinstance(exc, ssl.SSLCertVerificationError):
        return UNTRUSTED_CERTIFICATE
    if isinstance(exc, smtplib.SMTPAuthenticationError):
        return CREDENTIALS
    return UNREACHABLE


def one_line(text: str) -> str:
    return " ".join(text.split())
