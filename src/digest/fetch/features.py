"""Features for the items that have none stored: saved before the fetch stage stored them
with each page, or never fetched (a post, a page that failed). Compose reads stored features
and writes nothing, so without this it would make theirs again on every run."""

from __future__ import annotations

from digest.features import TEXT_CHARS, feature_text, text_features
from digest.store import Store

FEATURES_PER_RUN = 1_000  # ~6 ms each: a store from before features catches up over runs


def fill_missing_features(store: Store, limit: int = FEATURES_PER_RUN) -> int:
    """Store the features of up to `limit` items that have none (the starred and read
    first, then the newest); how many were made."""
    items = store.items_without_features(limit, text_chars=TEXT_CHARS)
    if items:
        store.save_features({item.id: text_features(feature_text(item)) for item in items})
    return len(items)
