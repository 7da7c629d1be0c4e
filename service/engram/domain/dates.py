"""Relative dates in a fact become absolute, from the time it was said (pure, never raises).

"I have a dentist appointment tomorrow", said on 2026-12-03, is stored as "I have a dentist
appointment on 2026-12-04": read a month later, "tomorrow" would be wrong. Chinese the same way:
"下个月3号交房租" -> "2027年1月3日交房租". The day a fact names (when it names one) is returned
too, for the memory's occurred_at.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass
from datetime import date, datetime, timedelta

from engram.domain.temporal import zh_number

_WEEKDAYS_EN = {
    name: i
    for i, names in enumerate(
        [
            ("monday", "mon"),
            ("tuesday", "tue", "tues"),
            ("wednesday", "wed"),
            ("thursday", "thu", "thurs"),
            ("friday", "fri"),
            ("saturday", "sat"),
            ("sunday", "sun"),
        ]
    )
    for name in names
}
_WEEKDAYS_ZH = {"一": 0, "二": 1, "三": 2, "四": 3, "五": 4, "六": 5, "日": 6, "天": 6, "末": 5}
_WEEKDAY_EN = "|".join(sorted(_WEEKDAYS_EN, key=len, reverse=True))
_NUM = "[0-9零一二两三四五六七八九十]{1,3}"
_MONTH_NAMES = [
    "January",
    "February",
    "March",
    "April",
    "May",
    "June",
    "July",
    "August",
    "September",
    "October",
    "November",
    "December",
]


@dataclass(frozen=True)
class Resolved:
    text: str
    day: date | None = None  # the day the fact names, when it names exactly one


def _en_day(d: date) -> str:
    return f"on {d.isoformat()}"


def _zh_day(d: date) -> str:
    return f"{d.year}年{d.month}月{d.day}日"


def _week_start(d: date, weeks: int) -> date:
    return d - timedelta(days=d.weekday()) + timedelta(weeks=weeks)


def _add_months(d: date, months: int) -> tuple[int, int]:
    index = d.year * 12 + d.month - 1 + months
    return index // 12, index % 12 + 1


def _weekday(d: date, weekday: int, weeks: int) -> date:
    """The given weekday of the week ``weeks`` from d's week (0 this week, 1 next, -1 last)."""
    return _week_start(d, weeks) + timedelta(days=weekday)


def _coming(d: date, weekday: int) -> date:
    """'this Friday' said on a Saturday is the Friday to come."""
    ahead = (weekday - d.weekday()) % 7
    return d + timedelta(days=ahead)


# (pattern, resolve(match, today) -> (replacement, day or None)); longer phrases first.
_Rule = tuple[re.Pattern[str], Callable[[re.Match[str], date], tuple[str, date | None]]]


def _day_rule(pattern: str, offset: int, zh: bool = False, flags: int = re.IGNORECASE) -> _Rule:
    def resolve(m: re.Match[str], today: date) -> tuple[str, date | None]:
        d = today + timedelta(days=offset)
        return (_zh_day(d) if zh else _en_day(d)), d

    return re.compile(pattern, flags), resolve


def _zh_month_day(months: int) -> Callable[[re.Match[str], date], tuple[str, date | None]]:
    def resolve(m: re.Match[str], today: date) -> tuple[str, date | None]:
        year, month = _add_months(today, months)
        d = date(year, month, zh_number(m[1]))
        return _zh_day(d), d

    return resolve


def _zh_month(months: int) -> Callable[[re.Match[str], date], tuple[str, date | None]]:
    def resolve(m: re.Match[str], today: date) -> tuple[str, date | None]:
        year, month = _add_months(today, months)
        return f"{year}年{month}月", None

    return resolve


def _en_month(months: int) -> Callable[[re.Match[str], date], tuple[str, date | None]]:
    def resolve(m: re.Match[str], today: date) -> tuple[str, date | None]:
        year, month = _add_months(today, months)
        return f"in {_MONTH_NAMES[month - 1]} {year}", None

    return resolve


_RULES: list[_Rule] = [
    _day_rule(r"\bthe day after tomorrow\b", 2),
    _day_rule(r"\bthe day before yesterday\b", -2),
    _day_rule(r"\btomorrow\b", 1),
    _day_rule(r"\b(?:yesterday|last night)\b", -1),
    _day_rule(r"\b(?:today|tonight|this morning|this afternoon|this evening)\b", 0),
    (
        re.compile(rf"\b(?:on )?next ({_WEEKDAY_EN})\b", re.I),
        lambda m, t: (_en_day(d := _weekday(t, _WEEKDAYS_EN[m[1].lower()], 1)), d),
    ),
    (
        re.compile(rf"\b(?:on )?last ({_WEEKDAY_EN})\b", re.I),
        lambda m, t: (_en_day(d := t - timedelta(days=(t.weekday() - _WEEKDAYS_EN[m[1].lower()]) % 7 or 7)), d),
    ),
    (
        re.compile(rf"\b(?:on )?this ({_WEEKDAY_EN})\b", re.I),
        lambda m, t: (_en_day(d := _coming(t, _WEEKDAYS_EN[m[1].lower()])), d),
    ),
    (
        re.compile(r"\bin (\d{1,3}) days\b", re.I),
        lambda m, t: (_en_day(d := t + timedelta(days=int(m[1]))), d),
    ),
    (
        re.compile(r"\b(\d{1,3}) days ago\b", re.I),
        lambda m, t: (_en_day(d := t - timedelta(days=int(m[1]))), d),
    ),
    (re.compile(r"\bnext week\b", re.I), lambda m, t: (f"in the week of {_week_start(t, 1).isoformat()}", None)),
    (re.compile(r"\blast week\b", re.I), lambda m, t: (f"in the week of {_week_start(t, -1).isoformat()}", None)),
    (re.compile(r"\bnext month\b", re.I), _en_month(1)),
    (re.compile(r"\blast month\b", re.I), _en_month(-1)),
    (re.compile(r"\bnext year\b", re.I), lambda m, t: (f"in {t.year + 1}", None)),
    (re.compile(r"\blast year\b", re.I), lambda m, t: (f"in {t.year - 1}", None)),
    # Chinese
    _day_rule("大后天", 3, zh=True, flags=0),
    _day_rule("后天", 2, zh=True, flags=0),
    _day_rule("明天|明日|明早|明晚", 1, zh=True, flags=0),
    _day_rule("前天", -2, zh=True, flags=0),
    _day_rule("昨天|昨日|昨晚", -1, zh=True, flags=0),
    _day_rule("今天|今日|今晚|今早", 0, zh=True, flags=0),
    (re.compile(rf"下个?月({_NUM})[号日]"), _zh_month_day(1)),
    (re.compile(rf"上个?月({_NUM})[号日]"), _zh_month_day(-1)),
    (re.compile(rf"(?:这个|本)月({_NUM})[号日]"), _zh_month_day(0)),
    (
        re.compile("下(?:个)?(?:周|星期|礼拜)([一二三四五六日天])"),
        lambda m, t: (_zh_day(d := _weekday(t, _WEEKDAYS_ZH[m[1]], 1)), d),
    ),
    (
        re.compile("上(?:个)?(?:周|星期|礼拜)([一二三四五六日天])"),
        lambda m, t: (_zh_day(d := _weekday(t, _WEEKDAYS_ZH[m[1]], -1)), d),
    ),
    (
        re.compile("(?:这|本)(?:周|星期|礼拜)([一二三四五六日天])"),
        lambda m, t: (_zh_day(d := _weekday(t, _WEEKDAYS_ZH[m[1]], 0)), d),
    ),
    (re.compile(rf"({_NUM})天(?:之|以)?后"), lambda m, t: (_zh_day(d := t + timedelta(days=zh_number(m[1]))), d)),
    (re.compile(rf"({_NUM})天(?:之|以)?前"), lambda m, t: (_zh_day(d := t - timedelta(days=zh_number(m[1]))), d)),
    (re.compile("下个?月"), _zh_month(1)),
    (re.compile("上个?月"), _zh_month(-1)),
    (re.compile("下(?:个)?(?:周|星期|礼拜)"), lambda m, t: (f"{_zh_day(_week_start(t, 1))}那周", None)),
    (re.compile("上(?:个)?(?:周|星期|礼拜)"), lambda m, t: (f"{_zh_day(_week_start(t, -1))}那周", None)),
    (re.compile("明年"), lambda m, t: (f"{t.year + 1}年", None)),
    (re.compile("去年"), lambda m, t: (f"{t.year - 1}年", None)),
]


def resolve_relative_dates(text: str, now: datetime) -> Resolved:
    """Every relative date of the text replaced by the absolute one; the day it names, if one."""
    today = now.date()
    days: list[date] = []
    for pattern, resolve in _RULES:
        pieces, last = [], 0
        for match in pattern.finditer(text):
            try:
                replacement, day = resolve(match, today)
            except (ValueError, OverflowError):  # "下个月31号" in a short month, a year out of range
                continue
            pieces += [text[last : match.start()], replacement]
            last = match.end()
            if day is not None:
                days.append(day)
        if pieces:
            text = "".join([*pieces, text[last:]])
    return Resolved(text, days[0] if len(set(days)) == 1 else None)
