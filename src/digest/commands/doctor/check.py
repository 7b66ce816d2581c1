"""One line of `digest doctor`: a check that passed, or a problem with its fix."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from digest.config import Config


@dataclass(frozen=True)
class Check:
    name: str
    ok: bool
    detail: str  # what was found
    fix: str = ""  # what to do, for a problem or a warning
    warning: bool = False  # ok (a run works), but not what the user wants: said with its fix

    def line(self) -> str:
        if self.warning:
            return f"{self.name}: warning: {self.detail}; fix: {self.fix}"
        if self.ok:
            return f"{self.name}: ok ({self.detail})"
        return f"{self.name}: problem: {self.detail}; fix: {self.fix}"


class Problem(Exception):
    def __init__(self, detail: str, fix: str):
        super().__init__(detail)
        self.detail, self.fix = detail, fix


def checked(name: str, check: Callable[[Config], str], config: Config) -> Check:
    try:
        return Check(name, True, check(config))
    except Problem as problem:
        return Check(name, False, problem.detail, problem.fix)
