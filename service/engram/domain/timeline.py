"""How many memories happened when: daily counts by type rolled up into days, weeks, months or years,
the size chosen by the span they cover (a picture of a tenant's history, not a search)."""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable
from datetime import UTC, date, datetime, time, timedelta
from enum import StrEnum

from pydantic import BaseModel, Field

# The longest span (in days) counted by day, by week and by month; anything longer is counted by year.
LONGEST_SPAN = {"day": 62, "week": 2 * 366, "month": 15 * 366}


class TimeBucket(StrEnum):
    auto = "auto"
    day = "day"
    week = "week"
    month = "month"
    year = "year"


class TimelinePoint(BaseModel):
    start: datetime = Field(description="the first instant of the day, week (Monday), month or year, UTC")
    end: datetime = Field(description="the first instant after it")
    counts: dict[str, int] = Field(description="memories that happened in it, by type")


class Timeline(BaseModel):
    bucket: TimeBucket = Field(description="day, week, month or year")
    total: int
    points: list[TimelinePoint] = Field(description="the buckets holding memories, oldest first")


def _start(day: date, bucket: TimeBucket) -> date:
    if bucket is TimeBucket.week:
        return day - timedelta(days=day.weekday())
    if bucket is TimeBucket.month:
        return day.replace(day=1)
    if bucket is TimeBucket.year:
        return day.replace(month=1, day=1)
    return day


def _next(start: date, bucket: TimeBucket) -> date:
    if bucket is TimeBucket.month:
        return (start.replace(day=28) + timedelta(days=4)).replace(day=1)
    if bucket is TimeBucket.year:
        return start.replace(year=start.year + 1)
    return start + timedelta(days=7 if bucket is TimeBucket.week else 1)


def chosen(bucket: TimeBucket, first: date, last: date) -> TimeBucket:
    if bucket is not TimeBucket.auto:
        return bucket
    span = (last - first).days
    return next((TimeBucket(size) for size, longest in LONGEST_SPAN.items() if span <= longest), TimeBucket.year)


def _instant(day: date) -> datetime:
    return datetime.combine(day, time.min, tzinfo=UTC)


def timeline(daily: Iterable[tuple[date, str, int]], bucket: TimeBucket = TimeBucket.auto) -> Timeline:
    """``daily``: (UTC day, type, count) rows in any order."""
    rows = list(daily)
    if not rows:
        return Timeline(bucket=TimeBucket.day if bucket is TimeBucket.auto else bucket, total=0, points=[])
    days = [day for day, _, _ in rows]
    size = chosen(bucket, min(days), max(days))
    counts: dict[date, dict[str, int]] = defaultdict(dict)
    for day, type_, n in rows:
        bin_ = counts[_start(day, size)]
        bin_[type_] = bin_.get(type_, 0) + n
    points = [
        TimelinePoint(start=_instant(start), end=_instant(_next(start, size)), counts=by_type)
        for start, by_type in sorted(counts.items())
    ]
    return Timeline(bucket=size, total=sum(n for _, _, n in rows), points=points)
