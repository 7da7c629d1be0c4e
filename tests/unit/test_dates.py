"""Dates in a fact (engram/domain/dates.py): relative ones resolved into the text, absolute ones
kept as said, and the day either names read for occurred_at, around the time it was said."""

import re
from datetime import UTC, date, datetime, timedelta

import pytest
from hypothesis import given
from hypothesis import strategies as st

from engram.domain.dates import absolute_day, resolve_relative_dates

NOW = datetime(2026, 12, 7, 10, tzinfo=UTC)  # a Monday


@pytest.mark.parametrize(
    ("said", "day"),
    [
        ("My flight to Tokyo is on December 20", date(2026, 12, 20)),
        ("flight's on Dec 20th", date(2026, 12, 20)),
        ("the party is on 20 December", date(2026, 12, 20)),
        ("my rent is due on the 20th", date(2026, 12, 20)),
        ("我12月20日飞东京", date(2026, 12, 20)),
        ("十二月二十号交房租", date(2026, 12, 20)),
        ("2027年1月3日交房租", date(2027, 1, 3)),
        ("二〇二七年一月三日开学", date(2027, 1, 3)),
        ("The conference is on January 5", date(2027, 1, 5)),  # what is to come: the next one
        ("I met her on March 3", date(2026, 3, 3)),  # told of the past: the last one
        ("我3月3日去了上海", date(2026, 3, 3)),
        ("I was born on July 4, 1990", date(1990, 7, 4)),
        ("The deadline is 2027-02-01", date(2027, 2, 1)),
    ],
)
def test_an_absolute_date_names_its_day(said, day):
    assert absolute_day(said, NOW) == day
    assert resolve_relative_dates(said, NOW).text == said  # kept as the user said it


@pytest.mark.parametrize(
    "said",
    [
        "I live at 3 May Street",  # no day: a street
        "我住在3号楼",  # a building number
        "Feb 30 was a joke",  # no such day
        "I fly on December 20 and come back on January 4",  # two days: neither is the day
        "May I ask something",
        "I have 12 cats",
    ],
)
def test_what_is_not_one_date_names_no_day(said):
    assert absolute_day(said, NOW) is None


def test_a_relative_date_is_written_out_and_names_its_day():
    resolved = resolve_relative_dates("我下周三去北京", NOW)
    assert resolved.text == "我2026年12月16日去北京" and resolved.day == date(2026, 12, 16)


MOMENTS = st.datetimes(min_value=datetime(3, 1, 1), max_value=datetime(9997, 1, 1), timezones=st.just(UTC))
PIECES = st.sampled_from(
    "December Dec 20 20th the on of 3 1990 2027 - 12 月 日 号 年 二十 十二 〇 一 I met will flight was 了 要".split()
)


@given(st.text(max_size=60) | st.lists(PIECES, max_size=10).map(" ".join), MOMENTS)
def test_the_date_readers_never_raise_and_a_date_without_a_year_is_near_the_moment_said(text, now):
    for said in (text, text.replace(" ", "")):
        day = absolute_day(said, now)
        resolve_relative_dates(said, now)
        if day is not None and not re.search(r"\d{4}|年", said):
            assert abs(day - now.date()) <= timedelta(days=400)
