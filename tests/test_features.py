"""What compose reads of an item is computed once, when its text is stored, and read back:
computed in memory (never stored by compose) for a text it was not computed from."""

from __future__ import annotations

from dataclasses import replace
from datetime import timedelta
from pathlib import Path

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from digest.compose.topics import JOIN_SIMILARITY, join_groups
from digest.compose.week import with_features
from digest.features import (
    feature_text,
    meanings,
    read,
    text_features,
    text_hash,
)
from digest.fetch.features import fill_missing_features
from digest.lifecycle import (
    FetchSucceeded,
    ItemRead,
    ItemStarred,
    ItemState,
    NoteAttached,
)
from digest.models import Extracted, Item, Note, SavedItem
from digest.store import Store, open_store
from loopback import LoopbackServer
from test_fetch_stage import T0, Rig, article

PAGE = (
    "Astronomers at the observatory found a comet whose orbit brings it close to the sun "
    "every seventy years. The telescope images show a long tail of dust and gas. " * 20
)


def test_a_fetched_page_is_stored_with_what_compose_reads_of_it(
    tmp_path: Path, server: LoopbackServer
) -> None:
    server.routes["/a"] = lambda request: article("Comets return")
    rig = Rig(tmp_path)
    rig.save(SavedItem(server.url("/a")))
    rig.fetch(T0)

    item = rig.only()
    stored = rig.store.features_of([item.id])[item.id]
    assert stored.text_hash == text_hash(feature_text(item))
    assert with_features(rig.store, [item]) == [replace(item, features=stored)]
    rig.store.close()


def fetched_without_features(store: Store) -> Item:
    """An item whose page was stored as before features were (m024a)."""
    source = store.ensure_source("inbox", "file", path="/inbox")
    store.save_items(source, [SavedItem("https://example.org/comet", title="Comet")], T0)
    [item] = store.all_items()
    page = Extracted(text=PAGE, title="Comet")
    store.apply_fetch(FetchSucceeded(item.id, page, "hash", T0, ItemState.FETCHED, None))
    [item] = store.all_items()
    return item


def test_an_item_stored_before_features_gets_them_at_compose_which_stores_nothing(
    tmp_path: Path,
) -> None:
    store = open_store(tmp_path / "digest.db")
    item = fetched_without_features(store)
    assert store.features_of([item.id]) == {}

    [first] = with_features(store, [item])

    assert first.features == text_features(feature_text(item))
    assert store.features_of([item.id]) == {}  # compose writes nothing: made again next time
    assert with_features(store, [item]) == [first]


def test_the_fetch_stage_stores_the_features_of_items_from_before_them(tmp_path: Path) -> None:
    rig = Rig(tmp_path)
    item = fetched_without_features(rig.store)

    rig.fetch(T0)

    stored = rig.store.features_of([item.id])[item.id]
    assert stored == text_features(feature_text(item))
    assert with_features(rig.store, [item]) == [replace(item, features=stored)]  # read, not made
    rig.store.close()


def test_pages_get_features_starred_and_read_first_then_newest(tmp_path: Path) -> None:
    store = open_store(tmp_path / "digest.db")
    source = store.ensure_source("inbox", "file", path="/inbox")
    saves = [SavedItem(f"https://example.org/{n}", title=f"Page {n}") for n in range(6)]
    for minutes, save in enumerate(saves):
        store.save_items(source, [save], T0 + timedelta(minutes=minutes))
    ids = {item.title: item.id for item in store.all_items()}
    for title, item_id in ids.items():
        if title != "Page 5":  # not fetched: no page, nothing costly to make
            page = Extracted(text=f"{PAGE} {title}", title=title)
            store.apply_fetch(FetchSucceeded(item_id, page, "hash", T0, ItemState.FETCHED, None))
    store.apply_star(ItemStarred(ids["Page 0"], T0))
    store.apply_read(ItemRead(ids["Page 1"], T0))

    assert fill_missing_features(store, limit=3) == 3
    assert set(store.features_of(list(ids.values()))) == {
        ids["Page 0"],
        ids["Page 1"],
        ids["Page 4"],
    }
    assert fill_missing_features(store, limit=3) == 2
    assert fill_missing_features(store, limit=3) == 0
    store.close()


def test_a_text_that_changed_gets_new_features(tmp_path: Path) -> None:
    store = open_store(tmp_path / "digest.db")
    source = store.ensure_source("inbox", "file", path="/inbox")
    store.save_items(source, [SavedItem("https://example.org/unread", title="Unread")], T0)
    [item] = store.all_items()
    [before] = with_features(store, [item])
    note = Note("A note about comets, their orbits and the dust of their tails.")
    store.attach_note(NoteAttached(item.id, "key", note, T0, ItemState.NOTED, final=True))
    [noted] = store.all_items()

    [after] = with_features(store, [noted])

    assert after.features is not None and before.features is not None
    assert after.features.text_hash == text_hash(feature_text(noted)) != before.features.text_hash


def test_the_meaning_of_a_text_is_wordllamas_embedding_of_it() -> None:
    import wordllama

    texts = [PAGE, "Rust's borrow checker, explained", "日本語のテキスト", ""]
    model = wordllama.WordLlama.load(
        cache_dir=Path(wordllama.__file__).parent, disable_download=True
    )
    theirs = model.embed([read(text) for text in texts[:3]], norm=True)

    ours = meanings([text_features(text) for text in texts])

    assert np.allclose(ours[:3], theirs, atol=1e-5)
    assert not ours[3].any()  # no token: no meaning, and no NaN


def closest_pair_first(similarity: np.ndarray) -> list[list[int]]:
    """Average linkage as defined: join the two closest groups while they are close enough."""
    groups = [[n] for n in range(len(similarity))]
    while len(groups) > 1:
        pairs = [(a, b) for a in range(len(groups)) for b in range(a + 1, len(groups))]
        mean = {(a, b): similarity[np.ix_(groups[a], groups[b])].mean() for a, b in pairs}
        a, b = max(mean, key=mean.__getitem__)
        if mean[a, b] < JOIN_SIMILARITY:
            break
        groups[a] = sorted(groups[a] + groups.pop(b))
    return sorted(groups)


@settings(max_examples=60)
@given(st.integers(1, 14), st.integers(0, 2**31 - 1), st.floats(0.0, 0.3))
def test_nearest_neighbour_chains_join_what_the_closest_pair_first_joins(
    count: int, seed: int, shift: float
) -> None:
    randomness = np.random.RandomState(seed)
    points = randomness.normal(size=(count, 4))
    points /= np.linalg.norm(points, axis=1, keepdims=True)
    similarity = points @ points.T + shift  # from none joined to all joined

    assert join_groups(similarity) == closest_pair_first(similarity)
