"""Notes and week summaries from any OpenAI-compatible chat completions server.

What is asked: the page text is data fenced by a random delimiter in the user message, never
instructions, condensed to llm.max_input_tokens before the call; prompt files that fail
give way to the built-in prompts for the rest of the run. Answers are read tolerantly
(answers.py, week_answers.py). How it is asked (timeouts, retries, fallbacks, spending):
chat_calls.py. No tools are offered.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable
from dataclasses import replace
from typing import Any, TypeVar

from digest.config import LLMConfig
from digest.models import Note, NoteBasis, Statement, WeekSummary
from digest.notes.answers import NOTE_SCHEMA, AnswerContext, parse_note_answer
from digest.notes.base import NoteRequest
from digest.notes.chat_calls import Ask, ChatCalls, Sends
from digest.notes.condense import condense
from digest.notes.prompts import (
    ECHO_MARKERS,
    MESSAGE_OVERHEAD_TOKENS,
    PromptProblem,
    check_prompt_files,
    new_delimiter,
    note_data,
    note_header,
    note_instructions,
    prompt_version,
    text_budget,
    week_budget,
    week_data,
    week_instructions,
)
from digest.notes.tokens import count_tokens
from digest.notes.week_answers import WEEK_SCHEMA, parse_week_answer
from digest.text import URL, shorten

log = logging.getLogger(__name__)
T = TypeVar("T")

WEEK_LINE_TOKENS = 90  # a note in the week summary's data: id, title, summary, tags


class OpenAISummarizer:
    """Notes and week summaries from one model; one instance per run (its calls remember
    fallbacks and what the run has spent)."""

    def __init__(self, config: LLMConfig, calls: ChatCalls) -> None:
        self.config = config
        self.model = config.model
        self.summary_model = config.summary_model or config.model
        self.prompt_version = prompt_version(config)
        self.calls = calls
        self._problems: list[str] = []  # prompt files that failed this run, one line each
        self._prompting(lambda: check_prompt_files(self.config))  # a broken file: from the start

    async def note(self, request: NoteRequest, *, calls_allowed: int | None = None) -> Note:
        async with self.calls.preparing():  # CPU work: off the event loop, one at a time
            ask, basis = await asyncio.to_thread(self._note_ask, request)
        context = AnswerContext(
            basis=basis,
            known_tags=request.known_tags,
            source=f"{request.title or ''}\n{request.text}",
            title=request.title or "",
            others=request.others,
            item_urls=(*([request.url] if request.url else []), *URL.findall(request.text)),
            echo_markers=(ask.delimiter, *ECHO_MARKERS),
            instructions=str(ask.messages[0].get("content", "")),
            language=self.config.language,
        )

        def parse(content: str | None, truncated: bool) -> Any:
            return parse_note_answer(content, replace(context, truncated=truncated))

        answer = await self.calls.answer(ask, parse, Sends(calls_allowed))
        return Note(
            summary=answer.summary,
            key_points=tuple(answer.key_points),
            tags=tuple(answer.tags),
            basis=basis,
            model=self.model,
            prompt_version=self.prompt_version,
        )

    def take_problems(self) -> list[str]:
        problems, self._problems = self._problems, []
        return problems

    def _prompting(self, make: Callable[[], T]) -> T:
        """`make()`; when a prompt file fails in it, the built-in prompt stands in for that
        file for the rest of the run (the failure kept for take_problems), and make() again."""
        try:
            return make()
        except PromptProblem as problem:
            self._problems.append(str(problem))
            self.config = self.config.model_copy(update={problem.key: None})
            self.prompt_version = prompt_version(self.config)
            return self._prompting(make)

    def _note_ask(self, request: NoteRequest) -> tuple[Ask, NoteBasis]:
        return self._prompting(lambda: self._note_ask_once(request))

    def _note_ask_once(self, request: NoteRequest) -> tuple[Ask, NoteBasis]:
        """The note's messages, the text condensed to fit the input budget, and its basis."""
        delimiter = new_delimiter()
        instructions = note_instructions(self.config, request, delimiter)
        header = note_header(request, self.config)
        text = condense(request.text, text_budget(self.config, instructions, header))
        data = note_data(header, text, delimiter)
        ask = _ask(
            Ask(
                "note",
                self.model,
                "note",
                NOTE_SCHEMA,
                self.config.max_output_tokens,
                who=_describe_item(request),
                item_id=request.item_id,
                delimiter=delimiter,
            ),
            instructions,
            data,
        )
        return ask, NoteBasis.EXCERPT if text != request.text else request.basis

    async def week_summary(
        self, period_label: str, notes: list[tuple[int, str, Note]]
    ) -> WeekSummary:
        delimiter = new_delimiter()
        instructions, data, left_out = self._prompting(lambda: self._week_ask(notes, delimiter))
        if left_out:
            log.warning("week summary %s: %d notes left out to fit", period_label, left_out)
        ask = _ask(
            Ask(
                "week-summary",
                self.summary_model,
                "week_summary",
                WEEK_SCHEMA,
                self.config.summary_max_output_tokens,
                who=f"week summary {period_label}",
                delimiter=delimiter,
            ),
            instructions,
            data,
        )
        cited = frozenset(item_id for item_id, _title, _note in notes)
        by_model = frozenset(item_id for item_id, _title, note in notes if note.by_model)
        said = {item_id: _note_text(title, note) for item_id, title, note in notes}

        def parse(content: str | None, truncated: bool) -> Any:
            return parse_week_answer(content, cited, by_model, truncated=truncated, notes=said)

        answer = await self.calls.answer(ask, parse, Sends(None))
        statements = (Statement(s.text, tuple(s.items)) for s in answer.statements)
        return WeekSummary(tuple(statements), tuple(answer.must_read), model=self.summary_model)

    def _week_ask(self, notes: list[tuple[int, str, Note]], delimiter: str) -> tuple[str, str, int]:
        """The week summary's instructions, its data and how many notes were left out."""
        instructions = week_instructions(self.config, delimiter)
        budget = week_budget(self.config, instructions)
        return (instructions, *week_data(notes, delimiter, budget, self.config))

    def planned_tokens(self, request: NoteRequest) -> int | None:
        return self._prompting(lambda: self._planned_tokens(request))

    def _planned_tokens(self, request: NoteRequest) -> int | None:
        delimiter = new_delimiter()
        instructions = note_instructions(self.config, request, delimiter)
        header = note_header(request, self.config)
        text = min(count_tokens(request.text), text_budget(self.config, instructions, header))
        fixed = count_tokens(instructions) + count_tokens(header) + 3 * MESSAGE_OVERHEAD_TOKENS
        return fixed + text

    def planned_week_tokens(self, note_count: int) -> int | None:
        return self._prompting(lambda: self._planned_week_tokens(note_count))

    def _planned_week_tokens(self, note_count: int) -> int | None:
        instructions = week_instructions(self.config, new_delimiter())
        notes = min(note_count * WEEK_LINE_TOKENS, week_budget(self.config, instructions))
        return count_tokens(instructions) + 3 * MESSAGE_OVERHEAD_TOKENS + notes

    async def aclose(self) -> None:
        await self.calls.aclose()


def _ask(purpose: Ask, instructions: str, data: str) -> Ask:
    """`purpose` with its two messages: the instructions, and the fenced data from the user."""
    return replace(
        purpose,
        messages=[
            {"role": "system", "content": instructions},
            {"role": "user", "content": data},
        ],
        prompt_tokens=count_tokens(instructions) + count_tokens(data),
    )


def _note_text(title: str, note: Note) -> str:
    """What a note says, as the week summary's statements are checked against it."""
    return "\n".join((title, note.summary, *note.key_points, *note.tags))


def _describe_item(request: NoteRequest) -> str:
    name = request.title or request.url
    return f"item {request.item_id} {shorten(name, 80)!r}" if name else f"item {request.item_id}"
