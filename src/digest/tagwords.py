"""Which words may name a section or tag: no stopword, filler ("actually", "wrong",
"understand"), number or piece of a URL ("https", "www", "com"). Read by the offline
summariser's tags (notes/tags.py) and by the phrases an item's features keep (features.py).
"""

from __future__ import annotations

import re

from digest.text import STOPWORDS

MIN_TAG_CHARS = 4  # shorter words pass only as capitalised acronyms: "GPU", "SQL"
_FILLER_WORDS = """
actually again ago almost already always another anyone anything around back best better
big bit called cannot come comes day days done else enough ever everyone everything exactly
fact far find found give given going gone good great hard help here's huge idea instead
just keep kind know knows large less little long look looking looks lot made maybe mean
means meant mostly need needs never next nothing often okay part people point pretty quite
rather read right says see seen seems simple simply since small someone sometimes soon start
stop sure take takes tell thanks that's there's they're think thought time times today told
took true try trying turn understand understanding want wants watch week went what's whole
why work works world wrong year years yes you'll you're you've
"""
_FILLER = frozenset(_FILLER_WORDS.split())
_URL_PARTS_WORDS = "http https www com org net io co html htm php amp utm ref"
_URL_PARTS = frozenset(_URL_PARTS_WORDS.split())


def is_tag_word(token: str) -> bool:
    """Whether a word as written may stand as a tag (or part of one)."""
    word = token.lower()
    if word in STOPWORDS or word in _FILLER or word in _URL_PARTS or not word[0].isalpha():
        return False
    if len(word) < MIN_TAG_CHARS:
        return len(word) >= 2 and token.isupper()
    return not any(part in _URL_PARTS for part in re.split(r"[.'’-]", word) if part != word)
