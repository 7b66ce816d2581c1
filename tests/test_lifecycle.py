"""The item lifecycle on plain data: no database, no server, no clock but the one given."""

from __future__ import annotations

from dataclasses import replace
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest

from digest import lifecycle
from digest.lifecycle import (
    TRANSITIONS,
    Backoff,
    Event,
    ItemKind,
    ItemState,
    NoteAttempts,
    Quality,
    next_state,
)
from digest.models import Extracted, Item, Note, Period

NOW = datetime(2026, 11, 18, 12, 0, tzinfo=UTC)
HOUR = timedelta(hours=1)
BACKOFF = Backoff(base_s=3600, max_s=86400, max_attempts=5)
WEEK = Period("2026-W47", datetime(2026, 11, 16, tzinfo=UTC), datetime(2026, 11, 23, tzinfo=UTC))


def item(state: ItemState = ItemState.NEW, kind: ItemKind = ItemKind.LINK, **changes: Any) -> Item:
    base = Item(
        id=7,
        key="https://a.example/x",
        url="https://a.example/x" if kind is ItemKind.LINK else None,
        title="X",
        kind=kind,
        saved_at=NOW - HOUR,
        topic=None,
        context=None,
        state=state,
        attempts=0,
        error=None,
        next_attempt_at=None,
        text=None,
    )
    return replace(base, **changes)


# -- the table -------------------------------------------------------------------


def test_the_table_says_where_every_state_goes_on_every_event() -> None:
    assert set(TRANSITIONS) == {(state, event) for state in ItemState for event in Event}


@pytest.mark.parametrize(
    ("state", "event", "after"),
    [
        (ItemState.NEW, Event.FETCHED, ItemState.FETCHED),
        (ItemState.FAILED, Event.FETCHED, ItemState.FETCHED),
        (ItemState.NOTED, Event.FETCHED, ItemState.FETCHED),
        (ItemState.NEW, Event.FETCH_FAILED, ItemState.FAILED),
        (ItemState.NOTED, Event.FETCH_FAILED, ItemState.FAILED),
        (ItemState.FETCHED, Event.NOTED_ON_TEXT, ItemState.NOTED),
        (ItemState.NEW, Event.NOTED_ON_TEXT, ItemState.NOTED),
        (ItemState.FAILED, Event.NOTED_ON_CONTEXT, ItemState.FAILED),
        (ItemState.FETCHED, Event.NOTED_ON_CONTEXT, ItemState.FETCHED),
        (ItemState.NOTED, Event.LINKS_FOLLOWED, ItemState.FETCHED),
        (ItemState.NEW, Event.LINKS_FOLLOWED, ItemState.NEW),
    ],
)
def test_a_transition_leads_where_the_table_says(
    state: ItemState, event: Event, after: ItemState
) -> None:
    assert next_state(state, event) is after


# -- due for fetch ---------------------------------------------------------------------


def test_a_new_link_is_due_for_fetch() -> None:
    assert lifecycle.due_for_fetch(item(), NOW)


def test_notes_and_posts_are_never_fetched() -> None:
    assert not lifecycle.due_for_fetch(item(kind=ItemKind.NOTE), NOW)
    assert not lifecycle.due_for_fetch(item(kind=ItemKind.POST), NOW)


def test_a_failed_fetch_is_due_again_only_once_its_backoff_is_over() -> None:
    failed = item(ItemState.FAILED, next_attempt_at=NOW + HOUR, failures=1)
    assert not lifecycle.due_for_fetch(failed, NOW)
    assert lifecycle.due_for_fetch(failed, NOW + HOUR)


def test_a_given_up_item_is_never_fetched_again() -> None:
    given_up = item(ItemState.FAILED, next_attempt_at=None, failures=5)
    assert given_up.gave_up
    assert not lifecycle.due_for_fetch(given_up, NOW + 1000 * HOUR)


def test_a_wall_is_checked_again_when_its_recheck_is_due() -> None:
    wall = item(ItemState.FETCHED, quality=Quality.CONSENT, next_attempt_at=NOW + HOUR)
    assert not lifecycle.due_for_fetch(wall, NOW)
    assert lifecycle.due_for_fetch(wall, NOW + HOUR)


def test_an_article_fetched_is_not_fetched_again() -> None:
    assert not lifecycle.due_for_fetch(item(ItemState.FETCHED, text="body"), NOW)
    assert not lifecycle.due_for_fetch(item(ItemState.NOTED, text="body"), NOW)


# -- fetch outcomes -----------------------------------------------------------------------


def test_an_article_fetched_clears_the_next_attempt() -> None:
    intent = lifecycle.fetch_succeeded(item(), Extracted(text="body"), "h", NOW, BACKOFF)
    assert (intent.state, intent.next_attempt_at, intent.item_id) == (ItemState.FETCHED, None, 7)


def test_a_wall_fetched_is_rechecked_with_backoff_over_its_attempts() -> None:
    wall = Extracted(text="Accept cookies", quality=Quality.CONSENT)
    first = lifecycle.fetch_succeeded(item(), wall, "h", NOW, BACKOFF)
    third = lifecycle.fetch_succeeded(item(attempts=2), wall, "h", NOW, BACKOFF)
    assert first.next_attempt_at == NOW + HOUR
    assert third.next_attempt_at == NOW + 4 * HOUR


def test_a_wall_is_given_up_rechecking_after_max_attempts() -> None:
    wall = Extracted(text="Accept cookies", quality=Quality.CONSENT)
    last = lifecycle.fetch_succeeded(item(attempts=4), wall, "h", NOW, BACKOFF)
    assert (last.state, last.next_attempt_at) == (ItemState.FETCHED, None)


def test_a_page_that_went_to_another_item_is_recorded_there() -> None:
    intent = lifecycle.fetch_succeeded(item(), Extracted(text="b"), "h", NOW, BACKOFF, item_id=9)
    assert intent.item_id == 9


def test_a_failed_fetch_is_retried_with_doubling_backoff() -> None:
    first = lifecycle.fetch_failed(item(), "HTTP 503", NOW, BACKOFF)
    second = lifecycle.fetch_failed(item(ItemState.FAILED, failures=1), "HTTP 503", NOW, BACKOFF)
    assert (first.state, first.next_attempt_at) == (ItemState.FAILED, NOW + HOUR)
    assert second.next_attempt_at == NOW + 2 * HOUR


def test_a_failed_fetch_waits_at_least_what_the_server_asked() -> None:
    intent = lifecycle.fetch_failed(item(), "HTTP 429", NOW, BACKOFF, retry_after_s=3 * 3600)
    assert intent.next_attempt_at == NOW + 3 * HOUR


def test_a_permanent_error_is_given_up_after_three_in_a_row() -> None:
    failed = item(ItemState.FAILED, failures=2)
    assert (
        lifecycle.fetch_failed(failed, "HTTP 404", NOW, BACKOFF, permanent=True).next_attempt_at
        is None
    )
    assert lifecycle.fetch_failed(failed, "HTTP 503", NOW, BACKOFF).next_attempt_at is not None


def test_a_failed_fetch_is_given_up_after_max_attempts() -> None:
    intent = lifecycle.fetch_failed(item(ItemState.FAILED, failures=4), "e", NOW, BACKOFF)
    assert intent.next_attempt_at is None


def test_the_backoff_is_capped() -> None:
    intent = lifecycle.fetch_failed(
        item(ItemState.FAILED, failures=3), "e", NOW, Backoff(3600, 7200, 10)
    )
    assert intent.next_attempt_at == NOW + 2 * HOUR


def test_a_noted_post_whose_links_were_followed_is_due_for_a_new_note() -> None:
    post = item(ItemState.NOTED, kind=ItemKind.POST)
    followed = lifecycle.links_followed(post, ["https://a.example/"], "A: says", None, NOW)
    assert (followed.state, followed.links, followed.at) == (
        ItemState.FETCHED,
        ("https://a.example/",),
        NOW,
    )


# -- due for a note -------------------------------------------------------------------------

NOTE = Note("A summary.", model="gpt", prompt_version="v3")


def test_a_link_not_fetched_yet_is_not_due_for_a_note() -> None:
    assert not lifecycle.due_for_note(item())


def test_a_fetched_link_is_due_for_a_note() -> None:
    assert lifecycle.due_for_note(item(ItemState.FETCHED, text="body"))


def test_a_failed_link_without_a_note_is_noted_from_what_was_saved() -> None:
    assert lifecycle.due_for_note(item(ItemState.FAILED))
    assert not lifecycle.due_for_note(item(ItemState.FAILED, note=NOTE))


def test_a_note_or_post_with_a_stand_in_is_due_again() -> None:
    assert lifecycle.due_for_note(item(kind=ItemKind.NOTE, note=NOTE))
    assert not lifecycle.due_for_note(item(ItemState.NOTED, kind=ItemKind.NOTE, note=NOTE))


def test_a_note_by_another_model_or_prompt_is_renoted() -> None:
    noted = item(ItemState.NOTED, note=NOTE)
    assert not lifecycle.renote_for_model(noted, "gpt", "v3")
    assert lifecycle.renote_for_model(noted, "gpt", "v4")
    assert lifecycle.renote_for_model(noted, "other", "v3")
    assert not lifecycle.renote_for_model(item(), "gpt", "v4")


def test_a_note_waiting_out_its_backoff_may_make_no_call() -> None:
    waiting = NoteAttempts(sends=1, failures=1, next_attempt_at=NOW + HOUR)
    assert lifecycle.note_calls_left(waiting, 3, NOW) == 0
    assert lifecycle.note_calls_left(waiting, 3, NOW + HOUR) == 2


def test_a_note_key_with_max_attempts_answers_is_not_asked_again() -> None:
    assert lifecycle.note_calls_left(NoteAttempts(sends=3), 3, NOW) == 0


# -- note outcomes ---------------------------------------------------------------------------


def test_a_final_note_on_a_fetched_page_makes_it_noted() -> None:
    intent = lifecycle.note_attached(item(ItemState.FETCHED), "k", NOTE, NOW, final=True)
    assert (intent.state, intent.final, intent.cache_key) == (ItemState.NOTED, True, "k")


def test_a_stand_in_note_leaves_the_item_due() -> None:
    intent = lifecycle.note_attached(item(ItemState.FETCHED), "k", NOTE, NOW, final=False)
    assert intent.state is ItemState.FETCHED
    assert lifecycle.due_for_note(item(ItemState.FETCHED, note=NOTE))


def test_a_final_note_on_a_failed_link_keeps_it_failed() -> None:
    intent = lifecycle.note_attached(item(ItemState.FAILED), "k", NOTE, NOW, final=True)
    assert intent.state is ItemState.FAILED


def test_a_final_note_on_a_saved_note_makes_it_noted() -> None:
    intent = lifecycle.note_attached(item(kind=ItemKind.NOTE), "k", NOTE, NOW, final=True)
    assert intent.state is ItemState.NOTED


def test_a_failed_note_adds_its_answers_and_backs_off_from_half_an_hour() -> None:
    before = NoteAttempts(sends=1, failures=1)
    intent = lifecycle.note_failed([7, 8], "k", before, 2, "unusable", NOW, 4)
    assert (intent.item_ids, intent.sends, intent.failures) == ((7, 8), 3, 2)
    assert intent.next_attempt_at == NOW + timedelta(hours=1)


def test_a_failed_note_with_no_attempt_left_has_no_next_attempt() -> None:
    intent = lifecycle.note_failed([7], "k", NoteAttempts(sends=1, failures=1), 1, "bad", NOW, 2)
    assert intent.sends == 2 and intent.next_attempt_at is None


# -- the week ---------------------------------------------------------------------------------


def test_a_week_shows_the_items_saved_in_it() -> None:
    assert lifecycle.in_week(item(saved_at=WEEK.start), WEEK)
    assert not lifecycle.in_week(item(saved_at=WEEK.end), WEEK)


def test_an_item_without_a_note_says_why() -> None:
    assert lifecycle.why_no_note(item()) == "page not fetched"
    failed = item(ItemState.FAILED)
    assert lifecycle.why_no_note(failed) == "page not fetched"
    assert lifecycle.why_no_note(failed, reason="paywalled") == "page not fetched (paywalled)"
    assert lifecycle.why_no_note(item(ItemState.FETCHED)).startswith("waiting for a note")


def test_new_saved_context_renews_the_note_of_a_link_whose_page_was_no_article() -> None:
    renews = lifecycle.context_renews_note
    assert renews(ItemKind.LINK, Quality.CONSENT, True, "old line", "new line")
    assert renews(ItemKind.LINK, None, False, None, "new line")  # never read
    assert not renews(ItemKind.LINK, Quality.CONSENT, True, "old line\nnew line", "new line")
    assert not renews(ItemKind.LINK, None, True, "old line", "new line")  # the article was read
    assert not renews(ItemKind.NOTE, None, False, "old line", "new line")


def test_a_changed_prompt_file_renotes_only_on_refresh() -> None:
    noted = item(
        ItemState.NOTED, note=Note("A note.", model="gpt", prompt_version="chat-2:English+file-aaa")
    )

    assert not lifecycle.renote_for_model(noted, "gpt", "chat-2:English+file-bbb")
    assert lifecycle.renote_for_model(noted, "gpt", "chat-2:English+file-bbb", refresh=True)
    assert not lifecycle.renote_for_model(noted, "gpt", "chat-2:English+file-aaa", refresh=True)
    assert lifecycle.renote_for_model(noted, "gpt", "chat-3:English+file-aaa")


def test_a_feed_past_its_attempts_is_slowed_down_never_given_up() -> None:
    backoff = lifecycle.Backoff(60, 3600, 3)
    first = lifecycle.feed_failed(7, 0, "HTTP 500", NOW, backoff)
    long_failing = lifecycle.feed_failed(7, 5, "HTTP 500", NOW, backoff)
    asked = lifecycle.feed_failed(7, 0, "HTTP 429", NOW, backoff, retry_after_s=600)
    assert first.next_attempt_at == NOW + timedelta(seconds=60)
    assert long_failing.next_attempt_at == NOW + timedelta(seconds=3600)
    assert asked.next_attempt_at == NOW + timedelta(seconds=600)


@pytest.mark.parametrize(
    ("gone", "partial", "status"),
    [(False, None, "ok"), (False, "entry 3 is not XML", "partial"), (True, None, "gone")],
)
def test_a_feed_poll_is_ok_read_in_part_or_gone(
    gone: bool, partial: str | None, status: str
) -> None:
    polled = lifecycle.feed_polled(
        7, [], NOW, url="https://a.example/feed", etag=None, last_modified=None, gone=gone,
        partial=partial,
    )  # fmt: skip
    assert (polled.status, polled.error) == (status, partial)
