from datetime import UTC, datetime, timedelta, timezone
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from engram.domain.temporal import time_intent, zh_number
from engram.evaluation.datasets import load_temporal

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


# Days the new expressions are asked on, each on its own clock: a Wednesday (NOW), a Sunday, a
# Monday that is the first of a month, the last day of a month, a Saturday that ends February, a
# Friday, and New Year's Eve.
SUNDAY = datetime.fromisoformat("2026-06-21T09:30:00+08:00")
MONDAY_FIRST = datetime.fromisoformat("2026-06-01T08:00:00-05:00")
TUESDAY_LAST = datetime.fromisoformat("2026-06-30T23:00:00+02:00")
SATURDAY_LAST = datetime.fromisoformat("2026-02-28T12:00:00+05:30")
FRIDAY = datetime.fromisoformat("2026-06-19T07:00:00-08:00")
NEW_YEARS_EVE = datetime.fromisoformat("2026-12-31T12:00:00+00:00")


@pytest.mark.parametrize(
    ("query", "now", "start", "end", "rest"),
    [
        # weekends back
        ("what did I do two weekends ago", NOW, "2026-06-06", "2026-06-08", "what did I do"),
        ("hikes 2 weekends ago", SUNDAY, "2026-06-06", "2026-06-08", "hikes"),  # not the one under way
        ("a weekend ago", MONDAY_FIRST, "2026-05-30", "2026-06-01", ""),
        ("the weekend before last", TUESDAY_LAST, "2026-06-20", "2026-06-22", ""),
        ("上上个周末去爬山", SUNDAY, "2026-06-06", "2026-06-08", "去爬山"),
        ("上上周末", NOW, "2026-06-06", "2026-06-08", ""),
        # the week and month before last
        ("the week before last", MONDAY_FIRST, "2026-05-18", "2026-05-25", ""),
        ("上上周去了哪里", NOW, "2026-06-01", "2026-06-08", "去了哪里"),
        ("上上个星期的会议", SUNDAY, "2026-06-01", "2026-06-08", "的会议"),
        ("上上个礼拜", MONDAY_FIRST, "2026-05-18", "2026-05-25", ""),
        ("the month before last", MONDAY_FIRST, "2026-04-01", "2026-05-01", ""),
        ("上上个月的账单", NOW, "2026-04-01", "2026-05-01", "的账单"),
        ("上上个月", NEW_YEARS_EVE, "2026-10-01", "2026-11-01", ""),
        # days ahead
        ("dentist tomorrow", TUESDAY_LAST, "2026-07-01", "2026-07-02", "dentist"),
        ("tomorrow", NEW_YEARS_EVE, "2027-01-01", "2027-01-02", ""),
        ("明天", NEW_YEARS_EVE, "2027-01-01", "2027-01-02", ""),
        ("the day after tomorrow", SUNDAY, "2026-06-23", "2026-06-24", ""),
        ("后天去医院", TUESDAY_LAST, "2026-07-02", "2026-07-03", "去医院"),
        ("大后天", SUNDAY, "2026-06-24", "2026-06-25", ""),
        ("in 3 days", TUESDAY_LAST, "2026-07-03", "2026-07-04", ""),
        ("flight in two weeks", NOW, "2026-06-27", "2026-07-06", "flight"),  # 1 July give or take 4 days
        # weeks and weekends ahead
        ("meetings next week", SUNDAY, "2026-06-22", "2026-06-29", "meetings"),
        ("next week", MONDAY_FIRST, "2026-06-08", "2026-06-15", ""),
        ("下周开会", SUNDAY, "2026-06-22", "2026-06-29", "开会"),
        ("下个星期", MONDAY_FIRST, "2026-06-08", "2026-06-15", ""),
        ("下礼拜", NOW, "2026-06-22", "2026-06-29", ""),
        ("下下周", NOW, "2026-06-29", "2026-07-06", ""),
        ("next weekend", NOW, "2026-06-27", "2026-06-29", ""),
        ("next weekend", SUNDAY, "2026-06-27", "2026-06-29", ""),
        ("下周末", SUNDAY, "2026-06-27", "2026-06-29", ""),
        ("this weekend", NOW, "2026-06-20", "2026-06-22", ""),
        ("这周末去哪", NOW, "2026-06-20", "2026-06-22", "去哪"),
        # months and years ahead
        ("next month", NEW_YEARS_EVE, "2027-01-01", "2027-02-01", ""),
        ("next month", TUESDAY_LAST, "2026-07-01", "2026-08-01", ""),
        ("下个月", NEW_YEARS_EVE, "2027-01-01", "2027-02-01", ""),
        ("next year", NEW_YEARS_EVE, "2027-01-01", "2028-01-01", ""),
        ("明年", NEW_YEARS_EVE, "2027-01-01", "2028-01-01", ""),
        # a month's first or last ten days
        ("下个月初交房租", TUESDAY_LAST, "2026-07-01", "2026-07-11", "交房租"),
        ("early next month", NEW_YEARS_EVE, "2027-01-01", "2027-01-11", ""),
        ("下个月底", NEW_YEARS_EVE, "2027-01-22", "2027-02-01", ""),
        ("end of next month", NOW, "2026-07-22", "2026-08-01", ""),
        ("下个月末", SATURDAY_LAST, "2026-03-22", "2026-04-01", ""),
        ("这个月初", TUESDAY_LAST, "2026-06-01", "2026-06-11", ""),
        ("本月底", SATURDAY_LAST, "2026-02-19", "2026-03-01", ""),  # February's last ten days
        ("上个月初", MONDAY_FIRST, "2026-05-01", "2026-05-11", ""),
        ("early last month", TUESDAY_LAST, "2026-05-01", "2026-05-11", ""),
        ("上个月底", MONDAY_FIRST, "2026-05-22", "2026-06-01", ""),
        ("at the end of last month", MONDAY_FIRST, "2026-05-22", "2026-06-01", ""),
        ("上个月末", NEW_YEARS_EVE, "2026-11-21", "2026-12-01", ""),
        # what is coming up: today and the 30 days after
        ("what is coming up", NOW, "2026-06-17", "2026-07-17", "what is"),
        ("what's coming up", NEW_YEARS_EVE, "2026-12-31", "2027-01-30", "what's"),
        ("upcoming trips", SUNDAY, "2026-06-21", "2026-07-21", "trips"),
        ("plans in the coming days", TUESDAY_LAST, "2026-06-30", "2026-07-30", "plans"),
        ("coming up", MONDAY_FIRST, "2026-06-01", "2026-07-01", ""),
        ("接下来有什么安排", SUNDAY, "2026-06-21", "2026-07-21", "有什么安排"),
        ("未来几天", NEW_YEARS_EVE, "2026-12-31", "2027-01-30", ""),
        ("what is coming up next week", NOW, "2026-06-22", "2026-06-29", "what is coming up"),  # the time wins
        # weekdays: "last" counts back from today, "this/next" and 上/这/本/下 name a week
        ("last Friday", NOW, "2026-06-12", "2026-06-13", ""),
        ("last Friday", SATURDAY_LAST, "2026-02-27", "2026-02-28", ""),  # yesterday
        ("last Friday", FRIDAY, "2026-06-12", "2026-06-13", ""),  # not today
        ("last Sunday", SUNDAY, "2026-06-14", "2026-06-15", ""),
        ("lunch last Monday", MONDAY_FIRST, "2026-05-25", "2026-05-26", "lunch"),
        ("this Friday", SUNDAY, "2026-06-19", "2026-06-20", ""),  # this week's, two days ago
        ("this Friday", NOW, "2026-06-19", "2026-06-20", ""),
        ("next Friday", NOW, "2026-06-26", "2026-06-27", ""),
        ("next Friday", SUNDAY, "2026-06-26", "2026-06-27", ""),
        ("dinner next Monday", NEW_YEARS_EVE, "2027-01-04", "2027-01-05", "dinner"),
        ("上周五", NOW, "2026-06-12", "2026-06-13", ""),
        ("上周五", SATURDAY_LAST, "2026-02-20", "2026-02-21", ""),  # last week's, not yesterday
        ("上星期五", SUNDAY, "2026-06-12", "2026-06-13", ""),
        ("上礼拜五", MONDAY_FIRST, "2026-05-29", "2026-05-30", ""),
        ("这周五", SUNDAY, "2026-06-19", "2026-06-20", ""),
        ("本周五", MONDAY_FIRST, "2026-06-05", "2026-06-06", ""),
        ("下周五", NOW, "2026-06-26", "2026-06-27", ""),
        ("上周日去了哪里", MONDAY_FIRST, "2026-05-31", "2026-06-01", "去了哪里"),
        ("这个星期天", NOW, "2026-06-21", "2026-06-22", ""),
        ("下礼拜一", NEW_YEARS_EVE, "2027-01-04", "2027-01-05", ""),
        ("上上周五", NOW, "2026-06-05", "2026-06-06", ""),
        # vague counts back: a couple is 2 give or take 1, a few (几) 3 give or take 2
        ("a couple of days ago", NOW, "2026-06-14", "2026-06-17", ""),
        ("what did I read a few days ago", MONDAY_FIRST, "2026-05-27", "2026-06-01", "what did I read"),
        ("a couple of weeks ago", SUNDAY, "2026-05-31", "2026-06-15", ""),
        ("a few weeks ago", NOW, "2026-05-13", "2026-06-11", ""),
        ("a couple of months ago", TUESDAY_LAST, "2026-04-01", "2026-06-01", ""),
        ("几天前", SUNDAY, "2026-06-16", "2026-06-21", ""),
        ("前几天买的书", TUESDAY_LAST, "2026-06-25", "2026-06-30", "买的书"),
        ("几周前", MONDAY_FIRST, "2026-04-27", "2026-05-26", ""),
        ("几个月前", NOW, "2026-01-18", "2026-05-19", ""),
    ],
)
def test_new_time_expressions_become_windows_on_the_clock_they_were_asked_by(query, now, start, end, rest):
    intent = time_intent(query, now)
    assert intent.window is not None, query
    expected = (datetime.fromisoformat(start), datetime.fromisoformat(end))
    assert (intent.window.start.replace(tzinfo=None), intent.window.end.replace(tzinfo=None)) == expected
    assert intent.window.start.tzinfo is now.tzinfo and intent.window.end.tzinfo is now.tzinfo
    assert intent.rest == rest and not intent.recent


@pytest.mark.parametrize(
    ("query", "rest"),
    [
        ("when was the last time I saw my sister", "when was I saw my sister"),
        ("when was I last at the gym", "at the gym"),
        ("the last time I went swimming", "I went swimming"),
        ("我上次去看牙医是什么时候", "我 去看牙医是什么时候"),
        ("我最后一次去看牙医是什么时候", "我 去看牙医是什么时候"),
        ("最近有什么安排", "有什么安排"),  # 最近 is recent, not coming up
    ],
)
def test_the_last_time_stays_a_wish_for_the_latest_and_no_window(query, rest):
    intent = time_intent(query, NOW)
    assert intent.recent and intent.window is None and intent.rest == rest


@pytest.mark.parametrize(
    ("query", "phrase", "rest"),
    [
        ("上周一起吃饭", "上周", "一起吃饭"),  # together last week, not last Monday
        ("上周三次", "上周", "三次"),  # three times last week
        ("上星期五天都在加班", "上星期", "五天都在加班"),
    ],
)
def test_a_number_after_last_week_is_not_a_weekday(query, phrase, rest):
    intent = time_intent(query, NOW)
    assert intent.window is not None and intent.window.phrase == phrase and intent.rest == rest


@pytest.mark.parametrize(
    "query",
    [
        "what did I do on Friday",  # which Friday? a bare weekday is left alone
        "Friday",
        "周五开会",
        "看一下周报",  # have a look at the weekly report
        "以下周期",  # the following cycles
        "之后天气怎么样",  # the weather afterwards
        "ideas I was coming up with",
        "twice in 2 weeks",
        "how many books did I read in a year",
        "十几天前",  # a dozen or more days ago: not "a few"
    ],
)
def test_words_that_only_look_like_the_new_times_are_left_alone(query):
    intent = time_intent(query, NOW)
    assert intent.window is None and not intent.recent and intent.rest == query


@pytest.mark.parametrize(
    "query",
    ["what is coming up", "what's coming up", "接下来有什么安排", "what is coming up next week", "明天要做什么"],
)
def test_a_question_about_what_is_coming_up_is_answered_by_the_time(query):
    assert time_intent(query, NOW).only_time


@pytest.mark.parametrize("query", ["upcoming dentist appointments", "接下来去哪里旅游", "下周五和谁吃饭"])
def test_coming_plans_with_a_topic_are_not_time_only(query):
    assert not time_intent(query, NOW).only_time


def test_the_temporal_set_dates_each_gold_memory_inside_its_question_window():
    corpus = load_temporal(Path(__file__).resolve().parents[1] / "data" / "temporal.json")
    [diary] = corpus.groups
    when = {m.external_id: m.occurred_at for m in diary.memories}
    for question in diary.questions:
        window = time_intent(question.text, question.asked_at).window
        if window is None:
            continue
        for gold in question.gold:
            assert window.start <= when[gold] < window.end, (question.text, gold)


# The new expressions, by the way they point: into the past, into the future, or at now's week or month.
PAST = [
    "two weekends ago", "2 weekends ago", "a weekend ago", "the weekend before last", "the week before last",
    "the month before last", "early last month", "end of last month", "at the end of last month", "last Friday",
    "last Monday", "last Sunday", "a couple of days ago", "a few days ago", "a couple of weeks ago",
    "a few weeks ago", "a couple of months ago", "several days ago", "a few years ago",
    "上上周", "上上个星期", "上上个礼拜", "上上个月", "上上个周末", "上周五", "上星期五", "上礼拜五", "上周日",
    "上星期天", "上上周五", "上个月初", "上个月底", "上个月末", "几天前", "前几天", "几周前", "几个月前", "几年前",
]  # fmt: skip
FUTURE = [
    "tomorrow", "the day after tomorrow", "next week", "next weekend", "next month", "next year", "in 3 days",
    "in two weeks", "in 2 months", "early next month", "end of next month", "next Friday", "next Monday",
    "what is coming up", "what's coming up", "coming up", "upcoming", "in the coming days",
    "明天", "后天", "大后天", "下周", "下个星期", "下礼拜", "下下周", "下周末", "下个月", "明年", "下个月初",
    "下个月底", "下个月末", "下周五", "下星期天", "下礼拜一", "接下来", "未来几天",
]  # fmt: skip
PRESENT = [
    "this Friday", "this Sunday", "this weekend", "这周五", "本周五", "这个星期天", "这周末", "这个月初", "本月底",
]  # fmt: skip
ENGLISH_WORDS = st.sampled_from(["what", "did", "I", "do", "Sam", "dentist", "dinner", "plans"]) | st.text(
    alphabet="bcdfghjklmnpqrstvwxz", min_size=1, max_size=5
)  # no vowels, so no time words
CHINESE_WORDS = st.sampled_from(["我", "和朋友", "吃饭", "看牙医", "什么", "有", "安排", "去了", "公园"])
# Any clock: every fixed offset within a day either way.
ZONES = st.timedeltas(min_value=timedelta(hours=-23, minutes=-59), max_value=timedelta(hours=23, minutes=59)).map(
    timezone
)
# Years far enough from 1 and 9999 that every window fits, in UTC too.
NOWS = st.datetimes(min_value=datetime(10, 1, 1), max_value=datetime(9989, 12, 31), timezones=ZONES)


@st.composite
def query_around(draw: st.DrawFn, phrases: list[str]) -> tuple[str, str]:
    """A phrase in random words of its language (English words apart, Chinese ones run together)."""
    phrase = draw(st.sampled_from(phrases))
    if phrase.isascii():
        phrase = draw(st.sampled_from([str.lower, str.title, str.upper]))(phrase)
        words, sep = ENGLISH_WORDS, " "
    else:
        words, sep = CHINESE_WORDS, draw(st.sampled_from(["", " "]))
    before, after = draw(st.lists(words, max_size=4)), draw(st.lists(words, max_size=4))
    return sep.join([*before, phrase, *after]), phrase


@given(query_around(PAST + FUTURE + PRESENT), st.datetimes(timezones=ZONES))
def test_the_new_phrases_never_raise_at_any_time(embedded, now):
    query, _ = embedded
    intent = time_intent(query, now)
    if intent.window is not None:  # none when the window would leave what a datetime holds
        assert intent.window.start < intent.window.end


@given(query_around(PAST + FUTURE + PRESENT), NOWS)
def test_a_new_phrase_becomes_a_window_on_nows_clock_and_leaves_the_rest(embedded, now):
    query, phrase = embedded
    intent = time_intent(query, now)
    assert intent.window is not None, query
    assert intent.window.start < intent.window.end
    assert intent.window.start.tzinfo is now.tzinfo and intent.window.end.tzinfo is now.tzinfo
    assert intent.window.phrase.lower() in phrase.lower()
    assert phrase.lower() not in intent.rest.lower()


def _start_of_day(now: datetime) -> datetime:
    return now.replace(hour=0, minute=0, second=0, microsecond=0)


@given(query_around(FUTURE), NOWS)
def test_a_future_phrase_is_a_window_from_today_on(embedded, now):
    window = time_intent(embedded[0], now).window
    assert window is not None
    assert window.start >= _start_of_day(now) and window.end > now


@given(query_around(PAST), NOWS)
def test_a_past_phrase_is_a_window_before_today(embedded, now):
    window = time_intent(embedded[0], now).window
    assert window is not None
    assert window.start < now and window.end <= _start_of_day(now)
