"""Items of a week as the store returns them, for tests of what is composed from them."""

from __future__ import annotations

from datetime import datetime, timedelta
from typing import Any

from digest.models import Item, ItemKind, ItemState


def week_item(id: int, week_start: datetime, **fields: Any) -> Item:
    """A noted link item saved `id` hours into the week; `fields` set the rest (a URL
    of its own by default, and the key the store would give it)."""
    url = fields.pop("url", f"https://site.example/{id}")
    values: dict[str, Any] = dict(
        id=id,
        key=url or f"note:{id}",
        url=url,
        title=None,
        kind=ItemKind.LINK,
        saved_at=week_start + timedelta(hours=id),
        topic=None,
        context=None,
        state=ItemState.NOTED,
        attempts=0,
        error=None,
        next_attempt_at=None,
        text=None,
        note=None,
    )
    return Item(**(values | fields))
