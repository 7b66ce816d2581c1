"""The model's budget for one run, shared by the notes and the week summary: the run's
summariser (made when first needed, its calls recorded against the run and what each cost),
the breaker that stops the model for the rest of the run (LLMUnavailable, BudgetReached, an
unfit model, the stage's deadline), and the prompt files that failed."""

from __future__ import annotations

import asyncio
import functools
from collections.abc import Callable
from dataclasses import dataclass, field

from digest.clock import Clock
from digest.config import Config
from digest.errors import BudgetReached, LLMUnavailable
from digest.models import Usage
from digest.notes import CallRecord, Options, Summarizer, make_summarizer
from digest.notes.outcomes import Outcomes
from digest.store import Store

OPENAI_BASE_URL = "https://api.openai.com/v1"


@dataclass(frozen=True)
class ModelVerdict:
    """What the run's model has left needing the reader's attention so far: why it wrote no
    notes (unreachable, unfit, or none came from it), and the prompt files that failed (the
    built-in prompt stood in)."""

    unreachable: str | None = None
    prompt_problems: tuple[str, ...] = ()


@dataclass
class RunBudget:
    store: Store
    config: Config
    clock: Clock
    run_id: int | None = None  # the run its calls are recorded against
    stopped: str | None = None  # why the LLM was stopped for the rest of this run
    unreachable: str | None = None  # stopped because the model could not be reached
    budget_spent: bool = False  # llm.budget_usd stopped the model for the run, on purpose
    unfit: str | None = None  # why the model is asked no more this run: its answers were refused
    asked: int = 0  # texts the model was asked about in this run
    by_model: int = 0  # of them, noted by the model
    outcomes: Outcomes = field(default_factory=Outcomes)  # the run's notes, by whom and why
    prompt_problems: list[str] = field(default_factory=list)  # prompt files that failed
    deadline: float | None = None  # the event loop's time when the notes stage stops calling
    # texts asked about at once: a text waiting for its turn learns of the breaker's verdict
    turns: asyncio.Semaphore = field(default_factory=lambda: asyncio.Semaphore(1))
    # by item (None: the week summary): the requests sent in this exchange, their cost
    _calls: dict[int | None, tuple[int, Usage]] = field(default_factory=dict)
    _writer: Summarizer | None = None  # the run's summariser, made when first needed

    def start(self) -> None:
        """The notes stage begins: its deadline (llm.stage_timeout_s) runs from now."""
        self.deadline = asyncio.get_running_loop().time() + self.config.llm.stage_timeout_s
        self.turns = asyncio.Semaphore(self.config.llm.concurrency)

    def writer(self) -> Summarizer:
        """The run's summariser, its calls recorded against the run; made on first use (a
        run that collects and fetches only needs no model, nor its key)."""
        if self._writer is None:
            self._writer = configured_summarizer(
                self.store, self.config, self.clock, on_call=self.record_call
            )
        return self._writer

    def offline_summarizer(self) -> Summarizer:
        """Stands in when the configured model fails on one item or on the week summary."""
        return make_summarizer(self.config.llm.model_copy(update={"provider": "offline"}))

    def record_call(self, call: CallRecord) -> None:
        self.store.record_llm_call(
            run_id=self.run_id,
            model=call.model,
            purpose=call.purpose,
            tokens_in=call.tokens_in,
            tokens_out=call.tokens_out,
            cost_usd=call.cost_usd,
            duration_s=call.duration_s,
            ok=call.ok,
            now=self.clock(),
            item_id=call.item_id,
        )
        used = Usage(call.tokens_in, call.tokens_out, call.cost_usd)
        sends, usage = self._calls.get(call.item_id, (0, Usage()))
        self._calls[call.item_id] = (sends + call.sent, usage + used)

    def sends(self, item_id: int | None) -> int:
        """The requests sent so far in the exchange for `item_id` (None: the week summary)."""
        return self._calls.get(item_id, (0, Usage()))[0]

    def spent(self, item_id: int | None) -> Usage:
        """What the exchange for `item_id` cost; the exchange is over."""
        return self._calls.pop(item_id, (0, Usage()))[1]

    def stop(self, exc: LLMUnavailable) -> None:
        """The model is stopped for the rest of the run (the first reason stands)."""
        self.stopped = self.stopped or str(exc)
        if isinstance(exc, BudgetReached):  # the budget stops the model on purpose
            self.budget_spent = True
        else:
            self.unreachable = self.unreachable or str(exc)

    def check_fit(self, model: str) -> None:
        """After a refused answer: stop asking a model most of whose first answers were."""
        if self.stopped or not self.outcomes.unfit():
            return
        first = self.outcomes.first
        refused = sum(kind is not None for kind in first)
        self.unfit = self.unreachable = (
            f"the model {model!r} is unfit for notes: {refused} of its first {len(first)} answers"
            f" were refused ({self.outcomes.refusals()}); no more asked this run, the offline"
            " notes stand; the next run asks again"
        )
        self.stopped = self.unfit

    def take_problems(self) -> list[str]:
        """The prompt files that failed since last asked, also kept in `prompt_problems` (the
        built-in prompt stood in: the run needs attention)."""
        problems = self._writer.take_problems() if self._writer is not None else []
        self.prompt_problems += problems
        return problems

    def verdict(self) -> ModelVerdict:
        return ModelVerdict(self.unreachable, tuple(self.prompt_problems))

    async def aclose(self) -> None:
        if self._writer is not None:
            await self._writer.aclose()


def configured_summarizer(
    store: Store,
    config: Config,
    clock: Clock,
    on_call: Callable[[CallRecord], None],
    *,
    need_key: bool = True,
) -> Summarizer:
    """The configured summariser, told which response format its server takes (found in
    earlier runs) and remembering the ones it finds."""
    base_url = config.llm.effective_base_url or OPENAI_BASE_URL
    options = Options(
        on_call=on_call,
        known_formats=store.response_formats(base_url),
        on_format=functools.partial(_remember_format, store, clock, base_url),
        need_key=need_key,
    )
    return make_summarizer(config.llm, options=options)


def _remember_format(
    store: Store, clock: Clock, base_url: str, model: str, response_format: str
) -> None:
    store.save_response_format(base_url, model, response_format, clock())
