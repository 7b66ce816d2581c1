"""What LLM calls cost, from the price table in the config, and the per-run cap."""

from __future__ import annotations

from digest.config import LLMConfig
from digest.errors import BudgetReached


def call_cost(config: LLMConfig, model: str, tokens_in: int, tokens_out: int) -> float:
    """USD for one call; 0 for a model with no price (a local server)."""
    price = config.price(model)
    if price is None:
        return 0.0
    return (tokens_in * price.input_per_mtok + tokens_out * price.output_per_mtok) / 1_000_000


class Spending:
    """One run's spending. A call is let through only if its worst case (its input and the
    most output it may return) still fits under llm.budget_usd with the calls in flight."""

    def __init__(self, config: LLMConfig) -> None:
        self.config = config
        self.spent_usd = 0.0
        self.reserved_usd = 0.0

    def reserve(self, model: str, tokens_in: int, max_tokens_out: int) -> float:
        """The worst-case cost set aside for a call; BudgetReached if it does not fit."""
        worst = call_cost(self.config, model, tokens_in, max_tokens_out)
        cap = self.config.budget_usd
        if cap is not None and self.spent_usd + self.reserved_usd + worst > cap:
            raise BudgetReached(
                f"LLM budget reached: ${self.spent_usd:.4f} spent this run, and the next call"
                f" could cost ${worst:.4f}, over llm.budget_usd = ${cap:g}"
            )
        self.reserved_usd += worst
        return worst

    def settle(self, reserved_usd: float, cost_usd: float) -> None:
        self.reserved_usd -= reserved_usd
        self.spent_usd += cost_usd
