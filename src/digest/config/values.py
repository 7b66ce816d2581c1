"""What every section of the config is built on: the base model, the `env:NAME` form of a
value kept in the environment, and the checks of one value (a web address, a plain
template, mail addresses) that several sections share."""

from __future__ import annotations

import re
from collections.abc import Collection

from pydantic import BaseModel, ConfigDict

from digest.text import template_problem
from digest.urls import BadURL, parse_url

ENV_PREFIX = "env:"  # a value read from this environment variable (a header, an Apprise URL)


class Section(BaseModel):
    # every number has a range (Field ge/gt and le), checked at load; no inf or nan
    model_config = ConfigDict(extra="forbid", frozen=True, allow_inf_nan=False, defer_build=True)


def web_url(value: str) -> str:
    """`value` if urls.parse_url takes it as an http(s) URL; else ValueError saying why."""
    parsed = parse_url(value)
    if isinstance(parsed, BadURL):
        shown = value if len(value) <= 80 else value[:79] + "…"
        raise ValueError(f"{parsed.reason}: {shown!r}")
    return parsed.url


def checked_template(value: str, fields: Collection[str]) -> str:
    """`value` if it is plain text with `{field}`s drawn from `fields`; else ValueError."""
    if (problem := template_problem(value, fields)) is not None:
        raise ValueError(problem)
    return value


_MAILBOX = re.compile(r"[^@\s<>(),;:\"\[\]\\]+@[^@\s<>(),;:\"\[\]\\]+")


def mail_addresses(entry: str) -> list[str]:
    """Every address `entry` holds ("a@x.org, B <b@y.org>": two), each as it is sent;
    ValueError naming what is not an address: none is dropped in silence."""
    from email.utils import formataddr, getaddresses

    found = getaddresses([entry])
    bad = [address or name or entry for name, address in found if not _MAILBOX.fullmatch(address)]
    if bad or not found or any(ord(c) < 32 for c in entry):
        raise ValueError(f"{entry!r}: {bad[0] if bad else entry!r} is not an email address")
    return [formataddr((name, address)) for name, address in found]
