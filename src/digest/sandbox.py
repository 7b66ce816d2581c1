"""Your templates and prompt files run here: Jinja's immutable sandbox, bounded.

A template shared like a dotfile is untrusted code. It renders with the documented fields
only: no globals but a bounded `range`, no attribute that starts with `_` (so no way to
Python's internals, modules or the environment), no method that changes a list or dict.
And a render is bounded: RENDER_SECONDS of time and RENDER_STEPS loop turns and calls, and
no text longer than OUTPUT_CHARS, whether the output or a string made on the way (`'a' *
n`, `s.ljust(n)`, `s.replace('', s)`, `'%999999999s' % x` are refused before they are made).

A render that fails for any reason is described by `problem` in one line naming the file,
the line and what to fix; the callers fall back to their built-in template or prompt.
"""

from __future__ import annotations

import functools
import re
import time
from collections.abc import Callable, Iterable, Iterator, Mapping
from contextvars import ContextVar
from dataclasses import dataclass
from pathlib import Path
from types import TracebackType
from typing import Any

import jinja2
from jinja2 import nodes
from jinja2.compiler import CodeGenerator, Frame
from jinja2.exceptions import SecurityError
from jinja2.loaders import split_template_path
from jinja2.sandbox import ImmutableSandboxedEnvironment

from digest.userfiles import UserFileError, read_small_text

RENDER_SECONDS = 3.0
RENDER_STEPS = 2_000_000  # loop turns and calls in one render
OUTPUT_CHARS = 4_000_000  # the rendered text, and any one string or list made on the way
LARGEST_NUMBER = 1_000_000  # a width, count or repeat a template may ask of a method
RANGE_ITEMS = 100_000
_BIG_WIDTH = re.compile(r"\*|\d{7,}")  # in a format spec: a width from the arguments, or huge
_FORMAT_SPEC = re.compile(r"%[^a-zA-Z%]*[a-zA-Z%]|\{[^{}]*\}")


class RenderLimit(SecurityError):
    """The render went past one of its bounds."""


@dataclass
class _Budget:
    deadline: float
    steps: int


_budget: ContextVar[_Budget | None] = ContextVar("render_budget", default=None)


def _step() -> None:
    budget = _budget.get()
    if budget is None:
        return
    budget.steps -= 1
    if budget.steps < 0:
        raise RenderLimit(f"more than {RENDER_STEPS:,} loop turns and calls: a loop too long?")
    if budget.steps % 256 == 0 and time.monotonic() > budget.deadline:
        raise RenderLimit(f"rendering took more than {RENDER_SECONDS:g} s: a loop too long?")


def _checked_size(value: Any) -> Any:
    if isinstance(value, str | list | tuple | dict) and len(value) > OUTPUT_CHARS:
        raise RenderLimit(f"a value longer than {OUTPUT_CHARS:,}: make less text")
    return value


def _check_arguments(args: Iterable[Any], *, widths: bool) -> None:
    """No argument too long, nor (`widths`: a method or filter that takes a width or a
    count) too large a number."""
    for arg in args:
        _checked_size(arg)
        if widths and isinstance(arg, int) and abs(arg) > LARGEST_NUMBER:
            raise RenderLimit(f"the number {arg} is above {LARGEST_NUMBER:,}: use a smaller one")


def _check_format(text: str) -> None:
    """Refuse a %-format or str.format spec that takes its width from an argument or asks
    for a huge one."""
    if any(_BIG_WIDTH.search(spec) for spec in _FORMAT_SPEC.findall(text)):
        raise RenderLimit("a format width taken from an argument or above 999,999")


def _expanded_size(text: str, method: str, args: tuple[Any, ...]) -> int:
    """The most characters str.`method` can make of `text` with `args`."""
    if method == "replace" and len(args) >= 2 and isinstance(args[0], str):
        old, new = args[0], str(args[1])
        found = len(text) + 1 if old == "" else text.count(old)
        return len(text) + found * max(0, len(new) - len(old))
    if method == "expandtabs" and args and isinstance(args[0], int):
        return len(text) + text.count("\t") * max(0, args[0])
    if method == "join" and args and isinstance(args[0], list | tuple):
        return _joined_size(args[0], text)
    return 0


def _joined_size(parts: Any, separator: str) -> int:
    if not isinstance(parts, list | tuple | str):
        return 0
    return sum(len(part) for part in parts if isinstance(part, str)) + len(separator) * len(parts)


class _GuardedLoops(CodeGenerator):
    """Every `{% for %}` iterates through the environment's `guarded`, which counts turns."""

    def visit_Template(self, node: nodes.Template, frame: Frame | None = None) -> None:
        for loop in node.find_all(nodes.For):
            guard = nodes.EnvironmentAttribute("guarded")
            loop.iter = nodes.Call(guard, [loop.iter], [], None, None).set_lineno(loop.lineno)
        super().visit_Template(node, frame)


class BoundedEnvironment(ImmutableSandboxedEnvironment):
    """The sandbox with globals taken away but `range` (bounded), and every loop turn, call,
    filter and operator counted and checked against the render's bounds."""

    code_generator_class = _GuardedLoops
    intercepted_binops = frozenset({"*", "**", "%"})

    def __init__(self, **options: Any) -> None:
        super().__init__(undefined=jinja2.StrictUndefined, **options)
        self.globals.clear()
        self.globals["range"] = _bounded_range
        self.filters = {name: _bounded(name, f) for name, f in self.filters.items()}

    def add_filters(self, filters: Mapping[str, Callable[..., Any]]) -> None:
        self.filters.update({name: _bounded(name, f) for name, f in filters.items()})

    def guarded(self, iterable: Iterable[Any]) -> Iterator[Any]:
        for value in iterable:
            _step()
            yield value

    def call(__self, __context: Any, __obj: Any, *args: Any, **kwargs: Any) -> Any:
        _step()
        wrapped = getattr(__obj, "__wrapped__", __obj)  # str.format comes wrapped
        owner = getattr(wrapped, "__self__", None)
        name = getattr(wrapped, "__name__", "") if isinstance(owner, str) else ""
        formats = name in ("format", "format_map")
        _check_arguments((*args, *kwargs.values()), widths=bool(name) and not formats)
        if isinstance(owner, str):
            if formats:
                _check_format(owner)
            if name == "join" and args and not isinstance(args[0], list | tuple):
                args = (list(__self.guarded(args[0])), *args[1:])
            if _expanded_size(owner, name, args) > OUTPUT_CHARS:
                raise RenderLimit(f"{name}() would make more than {OUTPUT_CHARS:,} characters")
        return _checked_size(super().call(__context, __obj, *args, **kwargs))

    def call_binop(self, context: Any, operator: str, left: Any, right: Any) -> Any:
        _step()
        if operator == "*" and _repeated_size(left, right) > OUTPUT_CHARS:
            raise RenderLimit(f"a repeat longer than {OUTPUT_CHARS:,}")
        if operator == "**" and _power_bits(left, right) > 100_000:
            raise RenderLimit("a power too large to compute: use smaller numbers")
        if operator == "%" and isinstance(left, str):
            _check_format(left)
        return _checked_size(super().call_binop(context, operator, left, right))


def _repeated_size(left: Any, right: Any) -> int:
    for seq, times in ((left, right), (right, left)):
        if isinstance(seq, str | list | tuple) and isinstance(times, int):
            return len(seq) * times
    return 0


def _power_bits(base: Any, exponent: Any) -> int:
    if isinstance(base, int) and isinstance(exponent, int):
        return abs(exponent) * max(1, abs(base).bit_length())
    return 0


def _bounded_range(*args: int) -> range:
    numbers = range(*args)
    if len(numbers) > RANGE_ITEMS:
        raise RenderLimit(f"range() of more than {RANGE_ITEMS:,} numbers")
    return numbers


def _bounded(name: str, filter_function: Callable[..., Any]) -> Callable[..., Any]:
    """The filter `name`, its arguments and result checked against the render's bounds
    (the wrapper keeps the filter's pass_context mark)."""

    @functools.wraps(filter_function)
    def bounded(*args: Any, **kwargs: Any) -> Any:
        _step()
        _check_arguments((*args, *kwargs.values()), widths=name in _WIDTH_FILTERS)
        if _filter_size(name, args, kwargs) > OUTPUT_CHARS:
            raise RenderLimit(f"a filter would make more than {OUTPUT_CHARS:,} characters")
        return _checked_size(filter_function(*args, **kwargs))

    return bounded


_WIDTH_FILTERS = frozenset({"center", "indent", "wordwrap", "truncate", "batch", "slice"})


def _filter_size(name: str, args: tuple[Any, ...], kwargs: Mapping[str, Any]) -> int:
    """The most characters the built-in filter `name` can make of `args` (0: no more than
    its input)."""
    if isinstance(args[0], jinja2.nodes.EvalContext):
        args = args[1:]  # the filter takes the eval context first
    if not args:
        return 0
    value = args[0]
    if name == "format" and isinstance(value, str):
        _check_format(value)
    if name == "replace" and len(args) >= 3 and isinstance(value, str):
        return _expanded_size(value, "replace", args[1:3])
    if name == "indent" and isinstance(value, str):
        width = kwargs.get("width", args[1] if len(args) > 1 else 4)
        return (value.count("\n") + 1) * (len(width) if isinstance(width, str) else int(width))
    if name == "join":
        separator = kwargs.get("d", args[1] if len(args) > 1 else "")
        return _joined_size(value, str(separator))
    return 0


def environment(
    loader: jinja2.BaseLoader | None = None,
    filters: Mapping[str, Callable[..., Any]] | None = None,
    **options: Any,
) -> BoundedEnvironment:
    env = BoundedEnvironment(loader=loader, **options)
    env.add_filters(filters or {})
    return env


class UserFolderLoader(jinja2.BaseLoader):
    """The templates in a user's folder, each read as a small text (digest.userfiles): a
    FIFO, device or huge file there is the template's failure, not a hung or swollen run."""

    def __init__(self, folder: Path) -> None:
        self.folder = folder

    def get_source(
        self, environment: jinja2.Environment, template: str
    ) -> tuple[str, str, Callable[[], bool]]:
        path = self.folder.joinpath(*split_template_path(template))
        if not (path.exists() or path.is_symlink()):
            raise jinja2.TemplateNotFound(template)
        text = read_small_text(path, "a template")
        mtime = path.stat().st_mtime
        return text, str(path), lambda: path.exists() and path.stat().st_mtime == mtime


def from_text(env: jinja2.Environment, text: str, path: Path) -> jinja2.Template:
    """The template `text` of the file at `path` (so that an error can name its line)."""
    code = env.compile(text, name=path.name, filename=str(path))
    return env.template_class.from_code(env, code, env.make_globals(None))


def render(template: jinja2.Template, context: Mapping[str, Any]) -> str:
    """`template` rendered with `context` within the bounds; RenderLimit past one of them."""
    token = _budget.set(_Budget(time.monotonic() + RENDER_SECONDS, RENDER_STEPS))
    try:
        chunks: list[str] = []
        size = 0
        for chunk in template.generate(**context):
            size += len(chunk)
            if size > OUTPUT_CHARS:
                raise RenderLimit(f"output longer than {OUTPUT_CHARS:,} characters")
            chunks.append(chunk)
        return "".join(chunks)
    finally:
        _budget.reset(token)


def problem(exc: BaseException, path: Path) -> str:
    """The one line for a failed render of the file at `path`: where, what, what to do."""
    if isinstance(exc, UserFileError):
        return str(exc)  # it names the file
    line = getattr(exc, "lineno", None) or _template_line(exc.__traceback__, str(path))
    where = f"{path}:{line}" if line else str(path)
    message = exc.message if isinstance(exc, jinja2.TemplateSyntaxError) else str(exc)
    first = (message or type(exc).__name__).splitlines()[0].rstrip(".")
    return f"{where}: {first}{_fix(exc)}"


def _fix(exc: BaseException) -> str:
    if isinstance(exc, RenderLimit | jinja2.TemplateSyntaxError):
        return ""
    if isinstance(exc, jinja2.UndefinedError):
        return " (use only the documented fields, or test with `is defined`)"
    if isinstance(exc, SecurityError):
        return " (a template may use its fields, not Python's internals)"
    if isinstance(exc, RecursionError):
        return " (a macro or loop that calls itself without end)"
    return f" ({type(exc).__name__}: guard it with an {{% if %}})"


def _template_line(tb: TracebackType | None, filename: str) -> int | None:
    """The line of the template where rendering failed: Jinja rewrites the traceback so
    that a template's frames carry its file name and line."""
    line = None
    while tb is not None:
        if tb.tb_frame.f_code.co_filename == filename:
            line = tb.tb_lineno
        tb = tb.tb_next
    return line
