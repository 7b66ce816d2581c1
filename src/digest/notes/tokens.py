"""Token counts for budgets and estimates: an approximation of cl100k_base, with no data file.

Exact counts would need an encoding's data, which tiktoken downloads on first use (and no
package ships under a licence we can use), so the text is cut as cl100k_base's pre-tokeniser
cuts it and each piece is costed: a common word is one token, a long one a token per five
more letters, up to three digits a token, a CJK character a token, two other non-ASCII
characters a token. On English prose it is within about 10 % of cl100k_base (median 0.96-0.99,
bench/tokens.py); text in other languages and markup take up to twice as many tokens as
counted. The counts size the condensed text and the estimates; the bill uses the server's.
"""

from __future__ import annotations

import re

# cl100k_base's pattern in the re module's dialect: a contraction, a word with the character
# before it, up to three digits, a run of punctuation, white space.
_PIECES = re.compile(
    r"'(?:[sdmtSDMT]|ll|ve|re)|[^\w\r\n]?[^\W\d_]+|\d{1,3}| ?[^\s\w]+[\r\n]*"
    r"|\s*[\r\n]|\s+(?!\S)|\s|_+"
)
_WIDE = re.compile(r"[\u1100-\u11ff\u2e80-\u9fff\uac00-\ud7af\uf900-\ufaff\uff00-\uffef]")


def count_tokens(text: str) -> int:
    """About the tokens of `text` under cl100k_base (see the module's note)."""
    return sum(_piece_tokens(piece) for piece in _PIECES.findall(text))


def _piece_tokens(piece: str) -> int:
    if not piece.isascii():
        wide = len(_WIDE.findall(piece))  # CJK ideographs, kana, Hangul, full-width forms
        return wide + -(-(len(piece) - wide) // 2)
    if piece[-1].isalpha():
        return 1 + max(0, len(piece.strip()) - 5) // 5
    if piece.isspace():
        return 1
    return 1 + max(0, len(piece) - 2) // 3
