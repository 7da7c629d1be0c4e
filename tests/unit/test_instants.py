"""Instants a caller sends, or that the service derives from them, stay inside what the time
arithmetic, the database driver and PostgreSQL can hold: an outside one is refused where it comes
in (a list cursor, `now`, a filter, an import's dates), or never made (a window, an occurred_at)."""

import base64
import uuid
from datetime import UTC, date, datetime, timedelta, timezone

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from engram.domain.boundary import bounded_instant, within_bounds
from engram.domain.models import NewMemory
from engram.domain.storing import as_stored
from engram.domain.temporal import time_intent
from engram.domain.transfer import read_memory
from engram.errors import InvalidInput
from engram.services.memories import _decode_cursor

# Every fixed offset a time zone may have (strictly within a day either way).
OFFSETS = st.timedeltas(min_value=timedelta(hours=-23, minutes=-59), max_value=timedelta(hours=23, minutes=59)).map(
    timezone
)
ANY_INSTANT = st.datetimes(timezones=OFFSETS | st.just(UTC))
# The ends of what datetime holds, where an offset or a year of arithmetic overflows: the days
# around the bounds above all, and the years either side.
EDGES = st.one_of(
    st.datetimes(min_value=datetime(1, 12, 30), max_value=datetime(2, 1, 3), timezones=OFFSETS),
    st.datetimes(min_value=datetime(9998, 12, 29), max_value=datetime(9999, 1, 2), timezones=OFFSETS),
    st.datetimes(min_value=datetime(1, 1, 1), max_value=datetime(3, 1, 1), timezones=OFFSETS),
    st.datetimes(min_value=datetime(9997, 12, 1), max_value=datetime(9999, 12, 31, 23, 59), timezones=OFFSETS),
)
A_YEAR = timedelta(days=365)


def accepted(value: datetime) -> datetime | None:
    try:
        return bounded_instant(value)
    except ValueError:
        return None


@settings(max_examples=500)
@given(ANY_INSTANT | EDGES)
def test_an_accepted_instant_leaves_a_year_either_side_on_its_clock_and_in_utc(value):
    instant = accepted(value)
    if instant is None:
        return
    in_utc = instant.astimezone(UTC)  # what the database driver sends
    for moved in (in_utc - A_YEAR, in_utc + A_YEAR, instant - A_YEAR, instant + A_YEAR):
        assert moved.year >= 1  # (an overflow raises before this)


@pytest.mark.parametrize(
    "edge",
    [
        "0002-01-01T00:00:00+23:59",  # year 1 in UTC
        "0002-01-01T05:00:00+06:00",
        "9998-12-31T23:00:00-05:00",  # year 9999 in UTC
        "0001-12-31T23:00:00-05:00",  # year 2 in UTC, year 1 on its clock
        "9999-01-01T01:00:00+05:00",
    ],
)
def test_an_instant_whose_year_is_out_on_either_clock_is_refused(edge):
    with pytest.raises(ValueError, match="must lie between"):
        bounded_instant(datetime.fromisoformat(edge))


@pytest.mark.parametrize(
    "inside", ["0002-01-01T00:00:00Z", "0002-01-01T00:00:00-05:00", "9998-12-31T23:59:59Z", "9998-12-31T20:00+03:00"]
)
def test_the_ends_themselves_are_accepted(inside):
    assert within_bounds(datetime.fromisoformat(inside))


def made_up(created: str, memory_id: str = str(uuid.UUID(int=7))) -> str:
    return base64.urlsafe_b64encode(f"{created}|{memory_id}".encode()).decode()


_YEARS = st.sampled_from(["10000", "0000", "-0001", "294277", "99999999999", "-4713", "0001", "9999", "2026"])
CURSOR_DATES = (
    st.builds(lambda y, rest: f"{y}{rest}", _YEARS, st.sampled_from(["-01-01", "-12-31T23:59:59-12:00", "-06-01+14"]))
    | ANY_INSTANT.map(datetime.isoformat)
    | EDGES.map(datetime.isoformat)
    | st.integers().map(str)
    | st.text(max_size=30)
)
CURSORS = (
    st.builds(made_up, CURSOR_DATES, st.uuids().map(str) | st.text(max_size=40))
    | st.binary(max_size=80).map(lambda raw: base64.urlsafe_b64encode(raw).decode())
    | st.text(max_size=80)
)


@given(CURSORS)
def test_any_cursor_is_a_bounded_position_or_refused_as_the_cursor(cursor):
    try:
        created, _ = _decode_cursor(cursor)
    except InvalidInput as exc:
        assert exc.field == "cursor"
        return
    assert created.tzinfo is not None and within_bounds(created)


@pytest.mark.parametrize(
    "created", ["10000-01-01", "0000-01-01", "-1", "99999999999999999999", "0002-01-01T00:00:00+23:59", "9999-12-31"]
)
def test_a_cursor_out_of_range_is_refused_as_the_cursor(created):
    with pytest.raises(InvalidInput) as refused:
        _decode_cursor(made_up(created))
    assert refused.value.field == "cursor"


TIME_WORDS = st.sampled_from(
    ["last year", "next year", "this year", "last month", "in December", "in January", "yesterday", "tomorrow",
     "last week", "2 weeks ago", "3 days ago", "in the past 10 days", "去年", "上个月", "最近三个月", "上周", "in May"]
)  # fmt: skip


@settings(max_examples=500)
@given(TIME_WORDS, EDGES | ANY_INSTANT)
def test_a_window_of_an_accepted_now_is_one_the_database_driver_can_send(words, now):
    instant = accepted(now)
    if instant is None:
        return
    window = time_intent(f"what did I do {words}", instant).window
    if window is not None:
        assert window.start.astimezone(UTC) < window.end.astimezone(UTC)


def test_last_year_asked_in_year_two_east_of_greenwich_is_no_window():
    now = bounded_instant(datetime.fromisoformat("0002-06-01T00:00:00+14:00"))
    assert time_intent("what did I do last year", now).window is None


@pytest.mark.parametrize(
    ("content", "now"),
    [
        ("I was born on July 4, 0001", None),
        ("My flight is on December 31, 9999", None),
        ("我9999年12月31日飞东京", None),
        ("I fly home tomorrow", "9998-12-31T10:00:00-10:00"),
        ("I flew home yesterday", "0002-01-01T10:00:00+09:00"),
    ],
)
def test_a_day_named_outside_the_bounds_is_no_occurred_at(content, now):
    item = NewMemory(content=content, now=now)
    assert as_stored(item).occurred_at is None


@given(
    st.sampled_from(["I fly home tomorrow", "I flew home yesterday", "I was born on January 1, {y}", "on the 31st"]),
    EDGES,
    st.sampled_from(["0001", "0002", "9998", "9999"]),
)
def test_a_derived_occurred_at_is_within_bounds(content, now, year):
    instant = accepted(now)
    if instant is None:
        return
    occurred = as_stored(NewMemory(content=content.format(y=year), now=instant)).occurred_at
    assert occurred is None or within_bounds(occurred)


def test_a_day_inside_the_bounds_is_still_the_occurred_at():
    item = NewMemory(content="My flight is on December 30, 9998", now="9998-06-01T00:00:00Z")
    assert as_stored(item).occurred_at.date() == date(9998, 12, 30)


EXPORTED = {
    "id": str(uuid.UUID(int=1)),
    "content": "The user likes tea",
    "type": "fact",
    "layer": "long_term",
    "source": None,
    "external_id": None,
    "importance": 0.5,
    "language": "en",
    "created_at": "2026-01-01T00:00:00Z",
    "updated_at": "2026-01-01T00:00:00Z",
    "occurred_at": None,
    "last_accessed_at": None,
    "access_count": 0,
    "status": "active",
    "superseded_by": None,
    "session_id": None,
    "task_id": None,
    "tags": [],
    "metadata": {},
    "embedding_model": "m",
}


@pytest.mark.parametrize(
    "field", ["created_at", "updated_at", "occurred_at", "last_accessed_at", "reinforced_at", "forgotten_at"]
)
@pytest.mark.parametrize("date_", ["0001-01-01T00:00:00+05:00", "9999-12-31T23:59:59-05:00", "0001-06-01T00:00:00Z"])
def test_an_imported_date_out_of_bounds_is_refused_with_its_line(field, date_):
    with pytest.raises(InvalidInput) as refused:
        read_memory({"memory": {**EXPORTED, field: date_}}, 7)
    assert refused.value.field == "line 7" and f"memory.{field}" in str(refused.value)


def test_an_imported_history_date_out_of_bounds_is_refused_with_its_line():
    line = {"memory": EXPORTED, "history": [{"event": "created", "at": "9999-12-31T23:00:00-05:00"}]}
    with pytest.raises(InvalidInput) as refused:
        read_memory(line, 3)
    assert refused.value.field == "line 3" and "history: Value error, entry 0's at must lie" in str(refused.value)


def test_an_imported_memory_inside_the_bounds_is_read():
    read = read_memory({"memory": EXPORTED, "history": [{"event": "created", "at": "2026-01-01T00:00:00Z"}]}, 2)
    assert read.memory.created_at == datetime(2026, 1, 1, tzinfo=UTC)
