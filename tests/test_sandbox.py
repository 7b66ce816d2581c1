"""digest.sandbox: a user's template reaches its fields only, and every render ends in
seconds, within its size bound, or fails in one line naming the file and line."""

from __future__ import annotations

import time
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from digest import sandbox

PATH = Path("/shared/templates/digest.md.j2")
SECRET = "sw0rdfish-SECRET-31"
CONTEXT = {"title": "Paged attention", "text": "ab" * 50_000, "known_tags": [], "count": 3}


def render(template: str) -> str:
    env = sandbox.environment()
    return sandbox.render(sandbox.from_text(env, template, PATH), CONTEXT)


def failure(template: str) -> str:
    with pytest.raises(Exception) as raised:
        render(template)
    return sandbox.problem(raised.value, PATH)


ESCAPES = [
    "{{ cycler.__init__.__globals__.os.environ }}",
    "{{ lipsum.__globals__['os'].popen('id').read() }}",
    "{{ joiner().__init__.__globals__ }}",
    "{{ namespace.__init__.__globals__ }}",
    "{{ title.__class__.__mro__[1].__subclasses__() }}",
    "{{ title['__class__'] }}",
    "{{ title|attr('__class__') }}",
    "{{ '{0.__class__.__mro__}'.format(title) }}",
    "{{ self.__init__.__globals__ }}",
    "{{ range.__self__ }}",
    "{{ known_tags.append(1) }}{{ known_tags }}",
    "{{ config }}{{ request }}{{ os }}",
]


@pytest.mark.parametrize("template", ESCAPES)
def test_a_template_cannot_reach_globals_internals_or_mutate(
    template: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("DIGEST_SMTP_PASSWORD", SECRET)

    line = failure(template)

    assert line.startswith(f"{PATH}:1: ") and "\n" not in line and SECRET not in line


BOMBS = [
    ("{% for i in range(10**12) %}x{% endfor %}", "range() of more than"),
    ("{% for i in range(99999) %}{% for j in range(99999) %}{% endfor %}{% endfor %}", "loop"),
    ("{% for a in text %}{% for b in text %}{{ a }}{% endfor %}{% endfor %}", "loop"),
    ("{% macro d(n) %}{% if n %}{{ d(n-1) }}{{ d(n-1) }}{% endif %}{% endmacro %}{{ d(60) }}", ""),
    ("{% macro f() %}{{ f() }}{% endmacro %}{{ f() }}", "calls itself"),
    ("{% macro d(s, n) %}{{ d(s ~ s, n - 1) if n else s }}{% endmacro %}{{ d('ab', 60) }}", ""),
    ("{{ 'a' * 10**10 }}", "a repeat longer"),
    ("{{ [1] * 10**10 }}", "a repeat longer"),
    ("{{ 7 ** 99999999 }}", "a power too large"),
    ("{{ title.ljust(10**10) }}", "above 1,000,000"),
    ("{{ text.replace('', text) }}", "replace() would make"),
    ("{{ text|replace('', text) }}", "would make more"),
    ("{{ text|list|join(text) }}", "would make more"),
    ("{{ text.join(text) }}", "join() would make"),
    ("{{ '%999999999s' % title }}", "format width"),
    ("{{ '%*s' % (999999999, title) }}", "format width"),
    ("{{ '{:>999999999}'.format(1) }}", "format width"),
    ("{{ '%s'|format(title) }}{{ '%99999999d'|format(1) }}", "format width"),
    ("{{ title|center(10**9) }}", "above 1,000,000"),
    ("{{ 1 / 0 }}", "ZeroDivisionError"),
    ("{{ known_tags[0] }}", "no element 0"),
    ("{{ nope }}", "'nope' is undefined"),
]


@pytest.mark.parametrize(("template", "why"), BOMBS)
def test_a_hostile_template_ends_in_seconds_with_one_line(template: str, why: str) -> None:
    started = time.process_time()  # the work it takes: a busy machine's wall time only flakes

    line = failure(template)

    assert time.process_time() - started < sandbox.RENDER_SECONDS + 2
    assert line.startswith(f"{PATH}:1: ") and why in line and "\n" not in line


def test_a_syntax_error_names_its_line() -> None:
    env = sandbox.environment()
    with pytest.raises(Exception) as raised:
        sandbox.from_text(env, "fine\n{% for x in y %}", PATH)

    assert sandbox.problem(raised.value, PATH).startswith(f"{PATH}:2: Unexpected end of template")


def test_the_documented_fields_and_filters_still_work() -> None:
    template = (
        "{{ title|upper }} {{ count * 2 }} {{ '%05d'|format(count) }} {{ '{:,}'.format(1234567) }}"
        " {% for i in range(3) %}{{ loop.index }}{% endfor %} {{ known_tags|join(', ') or '-' }}"
        " {{ title.replace('P', 'p') }} {{ text|length }}"
    )

    assert render(template) == "PAGED ATTENTION 6 00003 1,234,567 123 - paged attention 100000"


FRAGMENTS = [
    "{{ title }}", "{{ text|length }}", "x", "{% for i in range(N) %}", "{% endfor %}",
    "{% if count %}", "{% endif %}", "{{ title * N }}", "{{ text.replace(title, text) }}",
    "{{ N ** N }}", "{{ title.center(N) }}", "{{ '%0Nd' % count }}", "{{ title|indent(N) }}",
    "{{ title|wordwrap(N) }}", "{{ known_tags[N] }}", "{{ count / N }}", "{{ title.__class__ }}",
    "{% macro m(n) %}{{ m(n) }}{% endmacro %}", "{{ m(N) }}", "{{ text|batch(N)|list|length }}",
    "{{ (title ~ text) * N }}", "{{ range(N)|join(text) }}", "{{ lipsum(N) }}",
]  # fmt: skip


@st.composite
def templates(draw: st.DrawFn) -> str:
    parts = draw(st.lists(st.sampled_from(FRAGMENTS), min_size=1, max_size=8))
    numbers = st.sampled_from(["0", "1", "7", "99", "100001", "10**6", "10**9", "2**64", "-3"])
    return "".join(part.replace("N", draw(numbers)) for part in parts)


@pytest.mark.slow
@settings(max_examples=300, suppress_health_check=[HealthCheck.too_slow])
@given(templates())
def test_any_template_renders_within_bounds_or_fails_in_one_line(template: str) -> None:
    started = time.process_time()
    try:
        text = render(template)
    except Exception as exc:  # every failure is the template's, told in one line
        line = sandbox.problem(exc, PATH)
        assert line.startswith(f"{PATH}") and "\n" not in line
    else:
        assert len(text) <= sandbox.OUTPUT_CHARS
    assert time.process_time() - started < sandbox.RENDER_SECONDS + 2
