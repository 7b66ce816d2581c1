"""Reader comments are not the article: the usual comment markup (#comments, .comment lists,
<section class="comments">, Disqus, WordPress's commentlist) is left out of the text, however
long the thread, on pages written for this test."""

from __future__ import annotations

import pytest

from digest.extract import extract

URL = "https://news.example/ferry"

ARTICLE = [
    "The harbour ferry between Eastport and the island will run every half hour from June,"
    " the transport board said on Tuesday after a vote of its members.",
    "The board bought two electric boats last year and has trained eight new crew members,"
    " which lets it double the timetable without raising the fare for residents.",
    "Island shop owners had asked for later crossings for years, because deliveries often"
    " missed the last evening boat and fresh food arrived a day late.",
    "The first electric boat will enter service in May, and the second after a month of"
    " trials in the harbour, the board's engineer, Lena Park, told reporters.",
]


def comment(n: int) -> str:
    return (
        f"Reader {n} writes: I have taken this ferry for {n + 3} years and my grandmother"
        " remembers when the crossing was made by rowing boat, long before any timetable;"
        f" comment number {n} goes on about parking at the quay and the price of coffee."
    )


# Each reply is a bare "post" block: only its container says it is a comment.
THREADS = {
    "section.comments": '<section class="comments"><h2>Comments</h2>{}</section>',
    "#comments": '<div id="comments"><h3>32 Comments</h3>{}</div>',
    "disqus": '<div id="disqus_thread">{}</div>',
    "wordpress": '<div class="comments-area"><ol class="commentlist">{}</ol></div>',
    "coral": '<div id="coral_thread">{}</div>',
    "viafoura": '<div class="vf-comments">{}</div>',
    "data-component": '<div data-component="comments">{}</div>',
    "discussion": '<section class="discussion"><h2>Join the discussion</h2>{}</section>',
    "facebook": '<div class="fb-comments">{}</div>',
}


def page(thread: str, count: int = 30) -> str:
    body = "".join(f"<p>{paragraph}</p>" for paragraph in ARTICLE)
    item = "li" if thread == "wordpress" else "div"
    comments = "".join(f'<{item} class="post"><p>{comment(n)}</p></{item}>' for n in range(count))
    return (
        "<html><head><title>Ferry every half hour from June</title></head><body>"
        f"<header><a href='/'>Eastport News</a></header><article><h1>Ferry every half hour"
        f" from June</h1>{body}</article>{THREADS[thread].format(comments)}</body></html>"
    )


@pytest.mark.parametrize("thread", list(THREADS))
def test_a_long_comment_thread_is_left_out_of_the_article(thread: str) -> None:
    found = extract(page(thread).encode(), url=URL, content_type="text/html")
    assert "Reader" not in found.text and "grandmother" not in found.text
    for paragraph in ARTICLE:
        assert paragraph in " ".join(found.text.split())


def test_an_article_that_talks_about_comments_keeps_its_text() -> None:
    words = ARTICLE + ["Comments under the board's post asked for a night boat as well."]
    body = "".join(f"<p>{paragraph}</p>" for paragraph in words)
    html = f'<html><body><main class="post has-comments"><article class="comment-friendly">{body}</article></main></body></html>'
    found = extract(html.encode(), url=URL, content_type="text/html")
    assert "night boat" in found.text and ARTICLE[0] in " ".join(found.text.split())
