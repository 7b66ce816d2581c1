"""Features for the pages that have none stored: fetched before the fetch stage kept them
with each page. Compose reads stored features and writes nothing, so without this it would
make theirs again on every run (~6 ms a page; an item without a page, a few words, is cheap
to make in memory)."""

from __future__ import annotations

from digest.features import TEXT_CHARS, feature_text, text_features
from digest.store import Store

FEATURES_PER_RUN = 1_000  # ~6 ms each: a store from before features catches up over runs


def fill_missing_features(store: Store, limit: int = FEATURES_PER_RUN) -> int:
    """Store the features of up to `limit` pages that have none (the starred and read
    first, then the newest); how many were made."""
    items = store.items_without_features(limit, text_chars=TEXT_CHARS)
    if items:
        store.save_features({item.id: text_features(feature_text(item)) for item in items})
    return len(items)
