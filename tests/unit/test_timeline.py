"""The timeline's buckets: every memory counted once, in the bucket holding its day, with a bucket
size that keeps the picture readable for any span from one day to the whole range of dates."""

from __future__ import annotations

from datetime import UTC, date, datetime, timedelta

from hypothesis import given
from hypothesis import strategies as st

from engram.domain.timeline import TimeBucket, timeline

TYPES = st.sampled_from(["fact", "preference", "event", "task"])
DAYS = st.dates(min_value=date(2, 1, 1), max_value=date(9998, 12, 31))
ROWS = st.lists(st.tuples(DAYS, TYPES, st.integers(1, 1000)), max_size=60)


def test_days_weeks_months_and_years_by_span():
    assert timeline([(date(2026, 3, 14), "event", 2)]).bucket is TimeBucket.day
    week = timeline([(date(2026, 3, 14), "event", 1), (date(2026, 9, 9), "task", 1)])
    assert week.bucket is TimeBucket.week
    assert week.points[0].start == datetime(2026, 3, 9, tzinfo=UTC)  # the Monday of the week
    assert week.points[0].end == datetime(2026, 3, 16, tzinfo=UTC)
    month = timeline([(date(2020, 1, 31), "fact", 1), (date(2026, 12, 31), "fact", 1)])
    assert month.bucket is TimeBucket.month and month.points[-1].start == datetime(2026, 12, 1, tzinfo=UTC)
    assert month.points[-1].end == datetime(2027, 1, 1, tzinfo=UTC)
    year = timeline([(date(1990, 5, 1), "fact", 1), (date(2026, 5, 1), "fact", 1)])
    assert year.bucket is TimeBucket.year and year.points[0].start == datetime(1990, 1, 1, tzinfo=UTC)


def test_counts_by_type_add_up_in_their_bucket():
    rows = [(date(2026, 6, 1), "event", 2), (date(2026, 6, 3), "event", 1), (date(2026, 6, 3), "fact", 4)]
    result = timeline(rows, TimeBucket.week)
    assert result.total == 7
    assert [p.counts for p in result.points] == [{"event": 3, "fact": 4}]


def test_nothing_to_draw():
    empty = timeline([])
    assert empty.total == 0 and empty.points == []


@given(ROWS, st.sampled_from(list(TimeBucket)))
def test_every_memory_counted_once_in_the_bucket_of_its_day(rows, bucket):
    result = timeline(rows, bucket)
    assert result.total == sum(n for _, _, n in rows) == sum(sum(p.counts.values()) for p in result.points)
    starts = [p.start for p in result.points]
    assert starts == sorted(set(starts))  # oldest first, one point a bucket
    for day, _, _ in rows:
        instant = datetime(day.year, day.month, day.day, tzinfo=UTC)
        assert sum(p.start <= instant < p.end for p in result.points) == 1
    for p in result.points:
        assert p.end - p.start >= timedelta(days=1) and p.counts
