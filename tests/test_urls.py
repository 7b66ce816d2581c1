from __future__ import annotations

from urllib.parse import quote

import pytest
from hypothesis import assume, example, given
from hypothesis import strategies as st

from digest.urls import (
    BadURL,
    WebURL,
    is_shortener,
    is_tracking_param,
    normalize_url,
    parse_url,
)
from digest.urls.checks import _ipv4_written_out, _url_problem
from digest.urls.key import _normalize_parsed
from fuzzing import urls as fuzz_urls

UNRESERVED = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789-._~"

labels = st.text("abcdefghijklmnopqrstuvwxyz0123456789", min_size=1, max_size=12)
hosts = st.builds(
    lambda parts, tld: ".".join([*parts, tld]),
    st.lists(labels, min_size=1, max_size=3),
    st.sampled_from(["com", "org", "io", "dev"]),
).filter(lambda host: "arxiv" not in host)
segments = st.text(UNRESERVED, min_size=1, max_size=10)
paths = st.lists(segments, max_size=4).map(lambda parts: "/" + "/".join(parts))
names = st.text("abcdefghijklmnopqrstuvwxyz_", min_size=1, max_size=8).filter(
    lambda name: not is_tracking_param(name)
)
values = st.text(UNRESERVED, max_size=8)
queries = st.lists(st.tuples(names, values), max_size=3)
# anything at all, for idempotence: reserved characters, escapes, spaces, non-ASCII
wild = st.text(st.characters(blacklist_categories=("Cs", "Cc")), max_size=20)


def build(scheme: str, host: str, path: str, query: list[tuple[str, str]]) -> str:
    joined = "&".join(f"{k}={v}" for k, v in query)
    return f"{scheme}://{host}{path}" + (f"?{joined}" if joined else "")


@given(
    st.sampled_from(["http", "https", "HTTPS"]),
    hosts,
    st.one_of(st.none(), st.integers(1, 65535)),
    wild,
    wild,
    wild,
)
def test_normalizing_twice_changes_nothing(
    scheme: str, host: str, port: int | None, path: str, query: str, fragment: str
) -> None:
    url = f"{scheme}://{host}{'' if port is None else f':{port}'}/{path}?{query}#{fragment}"
    try:
        once = normalize_url(url)
    except ValueError:
        return  # not a URL normalize_url accepts; nothing to be idempotent about
    assert normalize_url(once) == once


@given(st.text(st.characters(exclude_categories=["Cs"]), max_size=40))
def test_normalizing_any_text_is_idempotent_or_refused(text: str) -> None:
    try:
        once = normalize_url(text)
    except ValueError:
        return
    assert normalize_url(once) == once


@given(hosts, paths, names, st.text(max_size=12))
def test_query_values_with_any_characters_normalize_idempotently(
    host: str, path: str, name: str, value: str
) -> None:
    once = normalize_url(build("https", host, path, [(name, quote(value, safe=""))]))
    assert normalize_url(once) == once


def test_encoded_plus_in_a_query_stays_a_plus() -> None:
    once = normalize_url("https://duckduckgo.com/?q=c%2B%2B")
    assert normalize_url(once) == once
    assert once != normalize_url("https://duckduckgo.com/?q=c++")  # "c++" here means "c  "


@given(hosts, paths, paths, queries)
def test_urls_with_different_paths_stay_distinct(
    host: str, first: str, second: str, query: list[tuple[str, str]]
) -> None:
    assume(first != second)
    assert normalize_url(build("https", host, first, query)) != normalize_url(
        build("https", host, second, query)
    )


@given(hosts, paths, names, values, values)
def test_urls_with_different_query_values_stay_distinct(
    host: str, path: str, name: str, first: str, second: str
) -> None:
    assume(first != second)
    assert normalize_url(build("https", host, path, [(name, first)])) != normalize_url(
        build("https", host, path, [(name, second)])
    )


@given(hosts, hosts, paths)
def test_urls_on_different_hosts_stay_distinct(first: str, second: str, path: str) -> None:
    assume(first != second)
    assert normalize_url(build("https", first, path, [])) != normalize_url(
        build("https", second, path, [])
    )


@pytest.mark.parametrize(
    "name", ["utm_source", "utm_medium", "UTM_Campaign", "fbclid", "gclid", "mc_cid", "ref_src"]
)
def test_tracking_parameters_are_removed(name: str) -> None:
    url = f"https://example.org/post?id=7&{name}=abc"
    assert normalize_url(url) == "https://example.org/post?id=7"


def test_fragment_is_removed() -> None:
    assert normalize_url("https://example.org/doc#section-2") == "https://example.org/doc"


@pytest.mark.parametrize(
    ("url", "expected"),
    [
        ("http://example.org:80/a", "http://example.org/a"),
        ("https://example.org:443/a", "https://example.org/a"),
        ("https://example.org:8443/a", "https://example.org:8443/a"),
    ],
)
def test_default_port_is_removed_and_others_kept(url: str, expected: str) -> None:
    assert normalize_url(url) == expected


def test_scheme_and_host_case_is_folded_but_path_case_kept() -> None:
    assert normalize_url("HTTPS://Example.ORG/CaseMatters") == "https://example.org/CaseMatters"


def test_empty_path_becomes_slash() -> None:
    assert normalize_url("https://example.org") == normalize_url("https://example.org/")


@pytest.mark.parametrize(
    "url",
    [
        "https://arxiv.org/abs/2407.08608",
        "https://arxiv.org/abs/2407.08608v2",
        "https://arxiv.org/pdf/2407.08608",
        "https://arxiv.org/pdf/2407.08608v1.pdf",
        "http://www.arxiv.org/pdf/2407.08608.pdf",
        "https://arxiv.org/html/2407.08608v3",
        "https://export.arxiv.org/abs/2407.08608?utm_source=x",
    ],
)
def test_arxiv_abs_pdf_and_versions_are_one_paper(url: str) -> None:
    assert normalize_url(url) == "https://arxiv.org/abs/2407.08608"


def test_old_style_arxiv_ids_are_one_paper() -> None:
    assert normalize_url("https://arxiv.org/pdf/hep-th/9901001v2") == normalize_url(
        "https://arxiv.org/abs/hep-th/9901001"
    )


def test_different_arxiv_papers_stay_distinct() -> None:
    assert normalize_url("https://arxiv.org/abs/2407.08608") != normalize_url(
        "https://arxiv.org/abs/2407.08609"
    )


def test_non_ascii_path_is_percent_encoded_once() -> None:
    once = normalize_url("https://de.wikipedia.org/wiki/Straße")
    assert once == "https://de.wikipedia.org/wiki/" + quote("Straße")
    assert normalize_url(once) == once


@pytest.mark.parametrize(
    "text", ["", "example.org/page", "/relative/path", "https://", "http://:80/"]
)
def test_text_that_is_not_an_absolute_url_is_refused(text: str) -> None:
    with pytest.raises(ValueError):
        normalize_url(text)


# What the fast path accepts, and its near misses: ports, case, tracking and blank
# parameters, escapes, `+`, fragments, arXiv paths.
plain_chars = "abcXYZ019-._~/:@!$&'()*+,;=%"
plain_urls = st.builds(
    lambda scheme, host, port, path, query, fragment: (
        f"{scheme}://{host}{port}{path}{query}{fragment}"
    ),
    st.sampled_from(["http", "https", "HTTP", "Https"]),
    st.one_of(hosts, st.sampled_from(["arxiv.org", "Export.arXiv.org", "t.co", "a-b.c-d"])),
    st.sampled_from(["", ":80", ":443", ":8080", ":0443", ":99999", ":"]),
    st.one_of(
        st.just(""),
        st.text(plain_chars, max_size=15).map(lambda p: "/" + p),
        st.sampled_from(["/abs/2407.08608v2", "/pdf/2407.08608.pdf", "/pdf/hep-th/9901001v2"]),
    ),
    st.one_of(
        st.just(""),
        st.lists(
            st.tuples(
                st.one_of(names, st.sampled_from(["utm_source", "fbclid", "UTM_x", ""])),
                st.text(plain_chars + "?", max_size=6),
            ),
            max_size=3,
        ).map(lambda pairs: "?" + "&".join(f"{k}={v}" for k, v in pairs)),
        st.sampled_from(["?", "?a", "?a=1&&b=2", "?a=b=c", "?q=c++", "?x=%2B"]),
    ),
    st.sampled_from(["", "#", "#top", "#a b"]),
)


@given(plain_urls)
def test_the_fast_path_gives_the_same_canonical_form_as_parsing(url: str) -> None:
    try:
        expected = _normalize_parsed(url)
    except ValueError:
        with pytest.raises(ValueError):
            normalize_url(url)
        return
    assert normalize_url(url) == expected


@pytest.mark.parametrize(
    "url",
    [
        "https://t.co/Db1Course0",
        "http://bit.ly/3xYz",
        "https://www.tinyurl.com/abc",
        "HTTPS://LNKD.IN/x",
    ],
)
def test_link_shorteners_are_recognised(url: str) -> None:
    assert is_shortener(url)


@pytest.mark.parametrize(
    "url",
    ["https://youtu.be/dQw4w9WgXcQ", "https://example.org/t.co", "https://not-t.co/x", "t.co/x"],
)
def test_other_links_are_not_shorteners(url: str) -> None:
    assert not is_shortener(url)


@given(st.one_of(plain_urls, fuzz_urls))
@example("HTTP://0")  # an IPv4 host in a short form: both ways read it written out
@example("http://127.1/x")
def test_parse_url_fast_path_agrees_with_the_full_checks(text: str) -> None:
    url = _ipv4_written_out(text.strip().removeprefix("<").removesuffix(">").strip())
    assert isinstance(parse_url(text), WebURL) == (_url_problem(url) is None)


@pytest.mark.parametrize(
    ("text", "reason"),
    [
        ("http://[::1", "unclosed [ in the host"),
        ("http://[fe80::1%25eth0]/", "IPv6 address with a zone id"),
        ("http://[example.org]/", "not an IPv6 address in [ ]"),
        ("http://[::1]junk/", "text after ] in the host"),
        ("http://example.org:99999/", "bad port '99999'"),
        ("http://example.org:0/", "bad port '0'"),
        ("http://example.org:8o/", "bad port '8o'"),
        ("https://\u2603.net/", "host name not valid (IDNA)"),
        ("https://\u00b24N\u00c5/", "host name not valid (IDNA)"),  # found by bench/fuzz.py
        ("https://a..b/", "bad host name"),
        ("http://exa mple.org/", "URL contains a space"),
        ("http://example.org/a\tb", "URL contains a control character"),
        ("http://example.org/\x00", "URL contains a control character"),
        ("http://:80/", "URL has no host"),
        ("http://999.1.1.1/", "not an IPv4 address"),
        ("https://example.org/" + "a" * 9000, "URL longer than 8 KB (9,020 characters)"),
        ("javascript:alert(1)", "not a web link (javascript:)"),
        ("file:///etc/passwd", "not a web link (file:)"),
        ("https:example.org", "not an absolute URL"),
        ("   ", "empty URL"),
        ("HTTP://A\\:65536", "backslash in the host"),  # urlsplit and httpx read it apart
        ("http://u:p\\x@h.test/", "backslash in the host"),
    ],
)
def test_each_url_the_parser_refuses_says_why(text: str, reason: str) -> None:
    assert parse_url(text) == BadURL(reason)


@pytest.mark.parametrize(
    ("text", "canonical"),
    [
        ("http://[::1]:8080/", "http://[::1]:8080/"),
        ("http://[::ffff:127.0.0.1]/", "http://[::ffff:127.0.0.1]/"),
        ("<https://Example.org/a?utm_source=x#top>", "https://example.org/a"),
        ("https://bücher.example/x", "https://bücher.example/x"),
        ("https://mastodon.social/users/Gargron/statuses/1", "https://mastodon.social/@Gargron/1"),
    ],
)
def test_urls_the_parser_takes_have_a_canonical_form(text: str, canonical: str) -> None:
    parsed = parse_url(text)
    assert isinstance(parsed, WebURL) and parsed.canonical == canonical


def test_credentials_in_a_url_are_kept_unless_refused() -> None:
    assert parse_url("http://user:pw@example.org/") == WebURL("http://user:pw@example.org/")
    assert parse_url("http://user:pw@example.org/", credentials=False) == BadURL(
        "URL holds a user name or password (not saved)"
    )
