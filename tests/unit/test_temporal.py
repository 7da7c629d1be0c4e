from datetime import UTC, datetime

import pytest
from hypothesis import given
from hypothesis import strategies as st

from engram.domain.temporal import time_intent, zh_number

NOW = datetime(2026, 6, 17, 18, 0, tzinfo=UTC)  # a Wednesday


def day(text: str) -> datetime:
    return datetime.fromisoformat(text).replace(tzinfo=UTC)


@pytest.mark.parametrize(
    ("query", "start", "end", "rest"),
    [
        ("what did I eat yesterday", "2026-06-16", "2026-06-17", "what did I eat"),
        ("dinner last week", "2026-06-08", "2026-06-15", "dinner"),
        ("books this week", "2026-06-15", "2026-06-22", "books"),
        ("trips last month", "2026-05-01", "2026-06-01", "trips"),
        ("in May", "2026-05-01", "2026-06-01", ""),
        ("in December", "2025-12-01", "2026-01-01", ""),  # the latest December, not a future one
        ("flights in September 2025", "2025-09-01", "2025-10-01", "flights"),
        ("dinner on 3 January 2026", "2026-01-03", "2026-01-04", "dinner"),
        ("tennis 9 days ago", "2026-06-08", "2026-06-09", "tennis"),
        ("what did I buy two weeks ago", "2026-05-30", "2026-06-08", "what did I buy"),
        ("in the past 10 days", "2026-06-07", "2026-06-18", ""),
        ("in 2023", "2023-01-01", "2024-01-01", ""),
        ("我上周去医院做了什么", "2026-06-08", "2026-06-15", "我 去医院做了什么"),
        ("五月份和朋友爬了什么山", "2026-05-01", "2026-06-01", "和朋友爬了什么山"),
        ("2023年5月8日的会议", "2023-05-08", "2023-05-09", "的会议"),
        ("三天前", "2026-06-14", "2026-06-15", ""),
        ("去年十月爬的山", "2025-01-01", "2026-01-01", "十月爬的山"),
        ("最近三个月的订单", "2026-03-19", "2026-06-18", "的订单"),
    ],
)
def test_time_expressions_become_windows(query, start, end, rest):
    intent = time_intent(query, NOW)
    assert intent.window is not None, query
    assert (intent.window.start, intent.window.end) == (day(start), day(end))
    assert intent.rest == rest and not intent.recent


@pytest.mark.parametrize(
    "query", ["when did I last go to the dentist", "上次和同事看了什么", "what did I buy recently"]
)
def test_last_time_asks_for_the_latest(query):
    intent = time_intent(query, NOW)
    assert intent.recent and intent.window is None


@pytest.mark.parametrize("query", ["I may go", "order 2023", "我一个月去一次健身房", "中秋节吃月饼", "my last name"])
def test_words_that_only_look_like_time_are_left_alone(query):
    intent = time_intent(query, NOW)
    assert intent.window is None and not intent.recent and intent.rest == query


def test_chinese_numbers():
    assert [zh_number(t) for t in ("3", "十", "十二", "二十", "两", "九")] == [3, 10, 12, 20, 2, 9]


@pytest.mark.parametrize(
    "query",
    [
        "what did I do last week?",
        "上周我做了什么",
        "what happened yesterday",
        "昨天发生了什么事",
        "in May",
        "上个月我去了哪里",
    ],
)
def test_a_question_about_a_time_alone_is_answered_by_the_time(query):
    assert time_intent(query, NOW).only_time


@pytest.mark.parametrize(
    "query", ["what did I eat last week", "上周我和谁吃饭了", "dentist in May", "去年十月爬的山", "what did I do"]
)
def test_a_question_with_a_topic_is_not_time_only(query):
    assert not time_intent(query, NOW).only_time


@pytest.mark.parametrize(
    "query", ["订单12345月底发货", "2024年13月", "9999年", "0年", "in 0000", "13月32号", "in May 9999"]
)
def test_impossible_dates_are_not_times(query):
    intent = time_intent(query, NOW)
    assert intent.window is None or intent.window.start < intent.window.end


# Pieces time words are made of, so that random queries hit the parser's rules, not only plain text.
PIECES = st.sampled_from(
    "年 月 日 号 份 天 周 前 上 最近 个 十 三 零 两 0 1 9 12 13 31 32 99 9999 0000 2024 "
    "last next week month year day days ago in on may May december the of 3rd , ".split(" ")
)


QUERIES = st.builds(
    lambda sep, parts: sep.join(parts), st.sampled_from(["", " "]), st.lists(PIECES | st.text(max_size=3))
)


@given(QUERIES, st.datetimes(timezones=st.just(UTC)))
def test_the_time_parser_never_raises(query, now):
    intent = time_intent(query, now)
    if intent.window is not None:
        assert intent.window.start < intent.window.end
