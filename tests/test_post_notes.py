"""A pasted post's note, read offline from its own text: its list, names and numbers, not
its hooks, ads or a chatbot's leftovers; titles that neither shout nor end on a colon."""

from __future__ import annotations

from digest.compose.postnotes import post_reading, readable_title
from digest.notes.judging import wordless

LECTURE = """IN 1998 MIT RECORDED A TALK THAT SAYS DATABASES ARE REALLY ABOUT ONE IDEA
55 minutes from Joe Hellerstein and Mike Stonebraker, the talk a generation of engineers calls the one that changed how they think.
The real subject was always one thing -- declarative queries. Everything else is detail.
Forty years later it reads like a prophecy.
Most people chase the newest framework. The ones who watched this think on another level.
Bookmark & Watch today, this one's a legend ↓"""

TIPS = """An engineer at a storage startup shared how they test their disks.
→ Pull the power cord mid-write. 3 of 10 drives lied about fsync.
→ Run the same test at 90% full. Latency doubled on two vendors.
Disk Lab is free on Pro until June 22. Try it before the window closes.
Every pointer is now 2-3 lines max. No fluff. Want me to lock this in?"""


def test_a_hook_post_is_noted_by_the_people_and_numbers_it_names() -> None:
    title = readable_title(LECTURE.splitlines()[0])
    assert title == ("In 1998 MIT recorded a talk that says databases are really about one idea")
    reading = post_reading(LECTURE, title)
    assert reading.prose is not None
    assert "Joe Hellerstein and Mike Stonebraker" in reading.prose
    for hook in ("always one thing", "prophecy", "The ones who", "Bookmark", "legend"):
        assert hook not in reading.prose


def test_ads_and_chatbot_leftovers_are_dropped_and_the_list_is_kept() -> None:
    reading = post_reading(TIPS, TIPS.splitlines()[0])
    assert reading.points == (
        "Pull the power cord mid-write. 3 of 10 drives lied about fsync.",
        "Run the same test at 90% full. Latency doubled on two vendors.",
    )
    assert reading.prose is None  # nothing but the title, the list, an ad and leftovers


def test_a_long_list_is_kept_short_and_no_note_repeats_the_title() -> None:
    text = "7 papers on caching:\n" + "\n".join(f"- Paper number {n}" for n in range(1, 8))
    reading = post_reading(text, readable_title("7 papers on caching:"))
    assert reading.points[-1] == "and 2 more" and len(reading.points) == 6
    assert reading.prose is None
    short = post_reading("Queues, explained.\nQueues, explained.", "Queues, explained.")
    assert short == post_reading("Queues, explained.", "Queues, explained.")
    assert short.prose is None


def test_a_sentence_that_opens_a_missing_list_ends_on_a_full_stop() -> None:
    text = "I never pay for profilers.\nHere are 9 tools to profile GPU kernels for free:"
    reading = post_reading(text, text.splitlines()[0], whole=True)
    assert reading.prose == "Here are 9 tools to profile GPU kernels for free."


def test_titles_lose_their_colon_and_shouted_words_keep_acronyms() -> None:
    assert readable_title("MIT's ABSOLUTELY FREE Books on AI & ML:") == (
        "MIT's absolutely free Books on AI & ML"
    )
    dgpo = "Distribution-Guided Policy Optimization (DGPO) – a new PO method for H100s"
    assert readable_title(dgpo) == dgpo
    assert readable_title("How we train with DGPO on CUDA") == "How we train with DGPO on CUDA"
    assert readable_title("A NEW METHOD (DGPO) FOR H100 TRAINING") == (
        "A new method (DGPO) for H100 training"
    )
    assert readable_title("Day 3: SLI, SLO & SLA") == "Day 3: SLI, SLO & SLA"
    assert readable_title("A DEVELOPER BUILT A GPU FROM SCRATCH") == (
        "A developer built a GPU from scratch"
    )


TALK = """While everyone argues about which JSON parser is fastest, this woman wrote one from scratch with SIMD. Live, on stage.
Theory, a Rust implementation, raw x86 assembly output. 41 minutes.
No frameworks. No dependencies. No hype.
Most devs copy-paste parsers they don't fully understand.
The ones who skipped it are still debugging slow parsers in prod."""


def test_a_post_whose_telling_sentence_has_no_words_is_noted_by_one_that_has() -> None:
    # "41 minutes." names a number and nothing else: a note must have content words
    title = "While everyone argues about which JSON parser is fastest, this woman wrote one…"
    reading = post_reading(TALK, title)
    assert reading.prose == "Theory, a Rust implementation, raw x86 assembly output."
    assert wordless(reading.prose) is None


def test_a_post_with_no_sentence_of_words_has_no_note() -> None:
    reading = post_reading("A talk worth your evening\n41 minutes.\nNo hype.", "A talk")
    assert reading.prose is None
