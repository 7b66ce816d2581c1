"""Where links led: posts' followed links, and shortened links settled under their target."""

from __future__ import annotations

import json

from digest.lifecycle import LinksFollowed
from digest.models import Item, ItemKind
from digest.store.base import POSTS_TO_FOLLOW, iso
from digest.store.items import ItemsStore
from digest.urls import for_display


class LinksStore(ItemsStore):
    def posts_to_follow(self) -> list[Item]:
        """Posts with links that have not been followed yet."""
        return self._items(
            f"WHERE i.kind = ? AND {POSTS_TO_FOLLOW} ORDER BY i.id",
            (ItemKind.POST,),
        )

    def apply_links_followed(self, intent: LinksFollowed) -> None:
        """Where a post's links led and what they said, in the state the lifecycle decided."""
        error = for_display(intent.error) if intent.error else None
        with self.write() as conn:
            conn.execute(
                "UPDATE items SET links = ?, linked_text = ?, error = ?, fetched_at = ?,"
                " state = ? WHERE id = ?",
                (
                    json.dumps(list(intent.links)),
                    intent.linked_text,
                    error,
                    iso(intent.at),
                    intent.state.value,
                    intent.item_id,
                ),
            )

    def move_to_key(self, item_id: int, key: str) -> int:
        """Give the item the key of the page its shortened link led to; returns its id.

        When an item already has that key, this one is merged into it (sources joined,
        the earliest save time, that item's URL kept for display) and deleted, and the
        other item's id is returned.
        """
        with self.write() as conn:
            row = conn.execute("SELECT id FROM items WHERE key = ?", (key,)).fetchone()
            target = item_id if row is None else int(row[0])
            if target == item_id:
                conn.execute(_ALIAS_OLD_KEY, (item_id, item_id))
                conn.execute("UPDATE items SET key = ? WHERE id = ?", (key, item_id))
                return item_id
            conn.execute(_ALIAS_OLD_KEY, (target, item_id))
            conn.execute("UPDATE item_aliases SET item_id = ? WHERE item_id = ?", (target, item_id))
            conn.execute(
                "INSERT INTO item_sources (item_id, source_id, saved_at)"
                " SELECT ?, source_id, saved_at FROM item_sources WHERE item_id = ?"
                " ON CONFLICT(item_id, source_id) DO UPDATE"
                " SET saved_at = min(saved_at, excluded.saved_at)",
                (target, item_id),
            )
            conn.execute(
                "UPDATE items SET saved_at = min(items.saved_at, old.saved_at),"
                " title = coalesce(items.title, old.title), topic = coalesce(items.topic, old.topic),"
                " context = CASE WHEN old.context IS NULL OR instr(coalesce(items.context, ''),"
                "   old.context) > 0 THEN items.context"
                "   ELSE coalesce(items.context || char(10), '') || old.context END"
                " FROM (SELECT saved_at, title, topic, context FROM items WHERE id = ?) AS old"
                " WHERE items.id = ?",
                (item_id, target),
            )
            conn.execute(
                "UPDATE OR IGNORE item_stars SET item_id = ? WHERE item_id = ?", (target, item_id)
            )
            conn.execute("DELETE FROM item_stars WHERE item_id = ?", (item_id,))
            conn.execute("DELETE FROM item_sources WHERE item_id = ?", (item_id,))
            conn.execute("DELETE FROM items WHERE id = ?", (item_id,))
            return target


# the key a shortened link was saved under now leads to the item holding its page
_ALIAS_OLD_KEY = (
    "INSERT INTO item_aliases (key, item_id) SELECT key, ? FROM items WHERE id = ?"
    " ON CONFLICT(key) DO UPDATE SET item_id = excluded.item_id"
)
