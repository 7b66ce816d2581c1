from __future__ import annotations

import asyncio

from digest.config import LLMConfig
from digest.models import Note, NoteBasis
from digest.notes import NoteRequest, OfflineSummarizer
from digest.notes.tags import tags_for

RANT = """\
I actually think this is wrong, and I don't understand why. It is actually wrong.
Read https://t.co/abc123 and https://www.example.com/file and https://www.example.com/file2.
The Obsidian wiki keeps growing. Obsidian plugins render the wiki.
LLM knowledge bases help. LLM knowledge bases are markdown files.
"""


def test_tags_are_never_filler_stopwords_numbers_or_url_parts() -> None:
    tags = tags_for(RANT + " 2024 2024", ())
    assert tags and not {"actually", "wrong", "understand", "https", "www", "com", "file"} & set(
        tags
    )
    assert not any(tag.isdigit() for tag in tags)


def test_recurring_phrases_and_capitalised_terms_come_first() -> None:
    assert tags_for(RANT, ())[:3] == ("knowledge bases", "obsidian", "llm")


def test_known_tags_the_text_mentions_lead() -> None:
    assert tags_for(RANT, ("Wiki",))[0] == "Wiki"


def offline_note(text: str, url: str | None = None, basis: NoteBasis = NoteBasis.POST_TEXT) -> Note:
    request = NoteRequest(item_id=1, title=None, url=url, text=text, basis=basis)
    return asyncio.run(OfflineSummarizer(LLMConfig(note_sentences=1)).note(request))


def test_key_points_skip_list_fragments_and_bare_links() -> None:
    post = (
        "This overview from CMU covers what matters when training models at scale.\n"
        "- hardware\n- memory\n"
        "https://t.co/RTWm0Ecni1\n"
        "Batch size and learning rate interact in ways most tutorials never explain.\n"
        "Checkpoint often, because preempted jobs lose hours of accelerator time.\n"
    )
    points = offline_note(post).key_points
    assert points
    assert not any(p.lstrip("\\").startswith("-") or "t.co" in p for p in points)


def test_a_bare_links_note_pretends_nothing_not_even_its_address() -> None:
    note = offline_note("", "https://www.youtube.com/watch?v=abc", NoteBasis.SAVED_CONTEXT)
    assert note.summary == ""  # the digest names the link by its address once
