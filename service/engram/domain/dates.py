"""Dates in a fact, from the time it was said (pure, never raises).

Relative dates become absolute: "I have a dentist appointment tomorrow", said on 2026-12-03, is
stored as "I have a dentist appointment on 2026-12-04": read a month later, "tomorrow" would be
wrong. Chinese the same way: "下个月3号交房租" -> "2027年1月3日交房租". Absolute dates are kept as
said ("My flight to Tokyo is on December 20", "我12月20日飞东京", "2027年1月3日", "Dec 20th", "on
the 20th"): a date without its year is the one nearest the time it was said, the next one when
the fact speaks of what is to come, the last one when it tells of the past. The day a fact names
(when it names exactly one) is returned too, for the memory's occurred_at.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass
from datetime import date, datetime, timedelta

from engram.domain.temporal import MONTHS, zh_number

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
            at_start = not text[: match.start()].strip() or text[: match.start()].rstrip()[-1:] in ".!?。！？\n"
            pieces += [
                text[last : match.start()],
                replacement[:1].upper() + replacement[1:] if at_start else replacement,
            ]
            last = match.end()
            if day is not None:
                days.append(day)
        if pieces:
            text = "".join([*pieces, text[last:]])
    return Resolved(text, days[0] if len(set(days)) == 1 else None)


_MONTH = "|".join(sorted(MONTHS, key=len, reverse=True))
_ORDINAL = r"(?:st|nd|rd|th)?"
_ZH_NUM = "[0-9零〇一二两三四五六七八九十]{1,3}"
_ZH_YEAR = "[0-9]{4}|[零〇一二三四五六七八九]{4}"
# (pattern, reads (year or None, month or None, day)); a month of None is the month of the moment said.
_ABSOLUTE: list[tuple[re.Pattern[str], Callable[[re.Match[str]], tuple[int | None, int | None, int]]]] = [
    (re.compile(r"\b(\d{4})-(\d{1,2})-(\d{1,2})\b"), lambda m: (int(m[1]), int(m[2]), int(m[3]))),
    (
        re.compile(rf"\b({_MONTH})\.?\s+(\d{{1,2}}){_ORDINAL}\b(?:,?\s+(\d{{4}})\b)?", re.I),
        lambda m: (int(m[3]) if m[3] else None, MONTHS[m[1].lower()], int(m[2])),
    ),
    (
        # not "3 May Street"
        re.compile(rf"\b(\d{{1,2}}){_ORDINAL}\s+(?:of\s+)?({_MONTH})\b(?!\s+[A-Z])\.?(?:,?\s+(\d{{4}})\b)?", re.I),
        lambda m: (int(m[3]) if m[3] else None, MONTHS[m[2].lower()], int(m[1])),
    ),
    # "on the 20th", not "the 5th floor" or "the 3rd child": no word of a thing after it
    (
        re.compile(
            r"\b(?:on\s+)?the\s+(\d{1,2})(?:st|nd|rd|th)\b(?!\s+(?!of\b|at\b|and\b|or\b|for\b|to\b)[a-z])", re.I
        ),
        lambda m: (None, None, int(m[1])),
    ),
    (
        re.compile(f"({_ZH_YEAR})年({_ZH_NUM})月({_ZH_NUM})[日号]"),
        lambda m: (_zh_year(m[1]), zh_number(m[2]), zh_number(m[3])),
    ),
    (re.compile(f"(?<![0-9年])({_ZH_NUM})月({_ZH_NUM})[日号]"), lambda m: (None, zh_number(m[1]), zh_number(m[2]))),
    # "20号飞东京", not "住在5号" or "3号选手" (a number, not a day)
    (
        re.compile(f"(?<![0-9月在是住])({_ZH_NUM})号(?![码楼线床房门位座桌院店馆线车厢选手窗口机])"),
        lambda m: (None, None, zh_number(m[1])),
    ),
]
_TO_COME = re.compile(
    r"\b(?:will|going to|gonna|is on|are on|plan|planning|booked|scheduled|due|deadline|appointment|flight|"
    r"flying|next|upcoming|coming)\b|要|将|打算|准备|计划|预约|预订|截止|到期|飞|下个?",
    re.I,
)
_PAST = re.compile(r"\b(?:was|were|went|had|did|met|got|came|took|saw|born|\w+ed)\b|了|过|出生|去年|上个?", re.I)


def _zh_year(text: str) -> int:
    return int(text) if text.isdigit() else int("".join(str(zh_number(ch)) for ch in text.replace("〇", "零")))


def absolute_day(text: str, now: datetime) -> date | None:
    """The one day the text names by its date ("December 20", "12月20日", "2027年1月3日", "on the
    20th"), its year, and its month for "the 20th", chosen around ``now`` (see the module's
    docstring); None when it names none, or several different ones, or an impossible one."""
    today = now.date()
    days: set[date] = set()
    taken: list[tuple[int, int]] = []
    for pattern, read in _ABSOLUTE:
        for match in pattern.finditer(text):
            if any(start <= match.start() < end for start, end in taken):
                continue  # "2027年1月3日" is not also "1月3日"
            taken.append(match.span())
            try:
                year, month, day = read(match)
                found = _placed(year, month, day, today, text)
            except (ValueError, OverflowError, KeyError):
                continue
            if found is not None:
                days.add(found)
    return days.pop() if len(days) == 1 else None


def _placed(year: int | None, month: int | None, day: int, today: date, text: str) -> date | None:
    if year is not None and month is not None:
        return date(year, month, day)
    if month is None:  # "the 20th": of this month, or the one before or after
        options = [date(*_add_months(today, shift), day) for shift in (-1, 0, 1) if _has_day(today, shift, day)]
    else:
        options = [
            date(today.year + shift, month, day) for shift in (-1, 0, 1) if _valid(today.year + shift, month, day)
        ]
    if not options:
        return None
    if _TO_COME.search(text):
        options = [d for d in options if d >= today]
    elif _PAST.search(text):
        options = [d for d in options if d <= today]  # "born on the 31st": not a day to come
    return min(options, key=lambda d: (abs((d - today).days), d)) if options else None


def _valid(year: int, month: int, day: int) -> bool:
    try:
        date(year, month, day)
    except ValueError:
        return False
    return True


def _has_day(today: date, shift: int, day: int) -> bool:
    year, month = _add_months(today, shift)
    return _valid(year, month, day)
