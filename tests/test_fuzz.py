"""Every parser, fuzzed: whatever it is given, it answers or gives its documented error,
and its output keeps its promises (tests/fuzzing.py says which). CI runs a few hundred
inputs per target; `python bench/fuzz.py` runs 10,000."""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings

from fuzzing import HOSTILE_URLS, check_url, targets

CI_EXAMPLES = 150
TARGETS = targets()


@pytest.mark.slow
@pytest.mark.parametrize("name", sorted(TARGETS))
def test_target_never_crashes_and_keeps_its_promises(name: str) -> None:
    strategy, check = TARGETS[name]

    @settings(
        max_examples=CI_EXAMPLES,
        suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
    )
    @given(strategy)
    def run(value: Any) -> None:
        check(value)

    run()


@pytest.mark.parametrize("url", HOSTILE_URLS)
def test_each_hostile_url_shape_is_answered_without_an_exception(url: str) -> None:
    check_url(url)
