"""Time in a query: "last week", "in May", "3 days ago", "next Friday", "coming up", "上周",
"五月", "下个月初", "上次" resolved against a reference time (pure). The search uses the window to
find and favour memories of that time, and searches the rest of the query without the time words."""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta, tzinfo

from engram.domain.tokenize import query_tokens

MONTHS = {
    name: number
    for number, names in enumerate(
        [
            ("january", "jan"),
            ("february", "feb"),
            ("march", "mar"),
            ("april", "apr"),
            ("may",),
            ("june", "jun"),
            ("july", "jul"),
            ("august", "aug"),
            ("september", "sep", "sept"),
            ("october", "oct"),
            ("november", "nov"),
            ("december", "dec"),
        ],
        start=1,
    )
    for name in names
}
_ZH_DIGITS = {"零": 0, "一": 1, "二": 2, "两": 2, "三": 3, "四": 4, "五": 5, "六": 6, "七": 7, "八": 8, "九": 9}
WEEKDAYS = {
    name: number
    for number, name in enumerate(("monday", "tuesday", "wednesday", "thursday", "friday", "saturday", "sunday"))
}
# 周日, 星期天, 礼拜日: Sunday is both 日 and 天.
_ZH_WEEKDAYS = {"一": 0, "二": 1, "三": 2, "四": 3, "五": 4, "六": 5, "日": 6, "天": 6}


@dataclass(frozen=True)
class TimeWindow:
    start: datetime  # inclusive
    end: datetime  # exclusive
    phrase: str  # the words that said it


@dataclass(frozen=True)
class TimeIntent:
    window: TimeWindow | None = None
    recent: bool = False  # "last time", "recently", "上次", "最近": the latest matching memory first
    rest: str = ""  # the query without its time words

    @property
    def only_time(self) -> bool:
        """The query names a time and asks nothing more ("what did I do last week", "上周我做了什么"):
        the answer is that time's memories, whatever their words."""
        return self.window is not None and asks_nothing_but_time(self.rest)


# What is left of "what did I do last week" / "上周我做了什么" once the time words are gone: the
# scaffolding of a question about a time, which names no topic.
_EN_SCAFFOLD = frozenset(
    query_tokens(
        "do done doing happen happened happening anything something everything thing things go went gone get got "
        "coming up tell remind recall remember user us plan plans planned activity activities whats what's"
    )
)
_ZH_SCAFFOLD = re.compile(
    "有没有|有什么|什么|干什么|干嘛|哪些|哪里|哪儿|一些|有些|事情|事儿|发生|安排|计划|打算|活动|告诉|说说|一下|记得|"
    "我们|你们|他们|她们|用户|做|干|啥|哪|些|事|去|过|了|吗|呢|吧|呀|啊|都|有|没|在|的|说|还|是|要|我|你|他|她"
)


def asks_nothing_but_time(rest: str) -> bool:
    """No topic words are left: only question scaffolding ("what did I do", "我做了什么")."""
    tokens = query_tokens(_ZH_SCAFFOLD.sub(" ", rest))
    return all(t in _EN_SCAFFOLD for t in tokens)


def zh_number(text: str) -> int:
    """'3', '十二', '二十' -> int (the small numbers dates use)."""
    if text.isdigit():
        return int(text)
    if "十" in text:
        tens, _, ones = text.partition("十")
        return (_ZH_DIGITS.get(tens, 1) if tens else 1) * 10 + (_ZH_DIGITS.get(ones, 0) if ones else 0)
    return _ZH_DIGITS.get(text, 0)


def _day(t: datetime) -> datetime:
    return t.replace(hour=0, minute=0, second=0, microsecond=0)


# In the helpers below, ``back`` counts days, weeks or months into the past; a negative one counts
# ahead ("tomorrow" is a day back of -1).


def _days(now: datetime, back: int, length: int = 1) -> tuple[datetime, datetime]:
    start = _day(now) - timedelta(days=back)
    return start, start + timedelta(days=length)


def _week(now: datetime, back: int) -> tuple[datetime, datetime]:
    """Monday to Monday."""
    start = _day(now) - timedelta(days=now.weekday() + 7 * back)
    return start, start + timedelta(days=7)


def _weekend(now: datetime, back: int) -> tuple[datetime, datetime]:
    """Saturday 00:00 to Monday 00:00 of that week: asked on a Sunday, "last weekend" is the one
    before the weekend under way, as "last week" is the week before this one."""
    saturday = _week(now, back)[0] + timedelta(days=5)
    return saturday, saturday + timedelta(days=2)


def _weekday_of_week(now: datetime, back: int, weekday: int) -> tuple[datetime, datetime]:
    """That day (0 = Monday) of that week: "上周五", "this Friday", "next Friday"."""
    start = _week(now, back)[0] + timedelta(days=weekday)
    return start, start + timedelta(days=1)


def _last_weekday(now: datetime, weekday: int) -> tuple[datetime, datetime]:
    """ "last Friday": the latest Friday before today (a week ago when today is a Friday)."""
    return _days(now, (now.weekday() - weekday - 1) % 7 + 1)


def _en_weekday(now: datetime, which: str, weekday: int) -> tuple[datetime, datetime]:
    # "last Friday" counts back from today, "this/next Friday" name a week: English speakers mean
    # yesterday by "last Friday" on a Saturday, but never last week's Friday by "this Friday".
    if which == "last":
        return _last_weekday(now, weekday)
    return _weekday_of_week(now, _EN_SHIFT[which], weekday)


def _zh_weekday(now: datetime, shift: str, weekday: str) -> tuple[datetime, datetime]:
    return _weekday_of_week(now, _ZH_SHIFT[shift], _ZH_WEEKDAYS[weekday])


def _month(year: int, month: int) -> tuple[datetime, datetime]:
    start = datetime(year, month, 1)
    end = datetime(year + month // 12, month % 12 + 1, 1)
    return start, end


def _months_back(now: datetime, back: int) -> tuple[datetime, datetime]:
    index = now.year * 12 + now.month - 1 - back
    return _month(index // 12, index % 12 + 1)


def _early(month: tuple[datetime, datetime]) -> tuple[datetime, datetime]:
    """ "early next month", "下个月初": the month's first days (its 上旬)."""
    return month[0], month[0] + timedelta(days=MONTH_PART_DAYS)


def _late(month: tuple[datetime, datetime]) -> tuple[datetime, datetime]:
    """ "end of last month", "上个月底": the month's last days (its 下旬)."""
    return month[1] - timedelta(days=MONTH_PART_DAYS), month[1]


def _upcoming(now: datetime) -> tuple[datetime, datetime]:
    """ "what's coming up", "接下来": from the start of today, what is planned for the next weeks."""
    return _days(now, 0, UPCOMING_DAYS)


def _latest_month(now: datetime, month: int) -> tuple[datetime, datetime]:
    """The most recent such month: "in May" asked in March means last May."""
    return _month(now.year if month <= now.month else now.year - 1, month)


def _year(year: int) -> tuple[datetime, datetime]:
    return datetime(year, 1, 1), datetime(year + 1, 1, 1)


def _date(year: int | None, month: int, day: int, now: datetime) -> tuple[datetime, datetime] | None:
    try:
        start = datetime(year or now.year, month, day)
    except ValueError:
        return None
    if year is None and start > now.replace(tzinfo=None):
        start = start.replace(year=start.year - 1)
    return start, start + timedelta(days=1)


_UNITS = {
    "day": 1,
    "week": 7,
    "month": 30,
    "year": 365,
    "天": 1,
    "日": 1,
    "周": 7,
    "星期": 7,
    "礼拜": 7,
    "个月": 30,
    "月": 30,
    "年": 365,
}
_MONTH = "|".join(sorted(MONTHS, key=len, reverse=True))
_WEEKDAY = "|".join(WEEKDAYS)
_ZH_NUM = "[0-9零一二两三四五六七八九十]{1,3}"
MONTH_PART_DAYS = 10  # "early"/"月初" and "late"/"月底": a month's first or last ten days
UPCOMING_DAYS = 30  # "coming up", "接下来": how far ahead plans are still "coming up"
# How many weeks or months back "last/this/next" and "上上/上/这/本/下/下下" are.
_EN_SHIFT = {"last": 1, "this": 0, "next": -1}
_ZH_SHIFT = {"上上": 2, "上": 1, "这": 0, "本": 0, "下": -1, "下下": -2}
# 上/这/本/下 name a week or a month, unless 一 or 以 makes them part of another word: "看一下周报"
# (have a look at the weekly report), "以下周期" (the following cycles).
_ZH_WHICH = "(?<![一以])(上上|上|这|本|下下|下)"
_ZH_NEXT = "(?<![一以])下"
# 上周五 is last Friday, but 上周五天 "five days last week", 上周三次 "three times last week", 上周一起
# "together last week": a number, a measure word or a word the digit begins is not a weekday.
_ZH_NUMBER_CHARS = "0-9零一二两三四五六七八九十百千万"
_ZH_MEASURE_WORDS = "个次天遍回趟本件位名场顿杯份张条只块元斤小分点号"
_ZH_WORDS_GOING_ON = "共起直些样下切般手"  # 一共 一起 一直 一些 一样 一下 一切 一般 二手
_NOT_A_WEEKDAY = f"(?![{_ZH_NUMBER_CHARS}{_ZH_MEASURE_WORDS}{_ZH_WORDS_GOING_ON}])"
# "in 3 days" is a day ahead, but "3 times in 2 weeks" or "twice in 2 weeks" a span. Counts of one
# ("in a week", "in a year") are left out: "how many books did I read in a year" asks a span
# at least as often as a time ahead.
_NOT_A_SPAN = "(?<!times )(?<!twice )(?<!once )"
# "a couple of", "a few", "几": counts nobody means exactly, as (count, give or take) in units.
_VAGUE = {"couple": (2, 1), "few": (3, 2), "several": (3, 2), "几": (3, 2)}

# Each rule: a pattern, and how its match becomes (start, end) given "now". Longer phrases first.
_Rule = tuple[re.Pattern[str], Callable[[re.Match[str], datetime], tuple[datetime, datetime] | None]]
_RULES: list[_Rule] = [
    (re.compile(r"\bthe day after tomorrow\b"), lambda m, now: _days(now, -2)),
    (re.compile(r"\btomorrow\b"), lambda m, now: _days(now, -1)),
    (re.compile(r"\bthe day before yesterday\b"), lambda m, now: _days(now, 2)),
    (re.compile(r"\b(?:yesterday|last night)\b"), lambda m, now: _days(now, 1)),
    (re.compile(r"\b(?:today|tonight|this morning|this afternoon|this evening)\b"), lambda m, now: _days(now, 0)),
    (re.compile(r"\b(\d+|a|an|one|two|three) weekends? ago\b"), lambda m, now: _weekend(now, _count(m[1]))),
    (re.compile(r"\bthe weekend before last\b"), lambda m, now: _weekend(now, 2)),
    (re.compile(r"\blast weekend\b"), lambda m, now: _weekend(now, 1)),
    (re.compile(r"\bthis weekend\b"), lambda m, now: _weekend(now, 0)),
    (re.compile(r"\bnext weekend\b"), lambda m, now: _weekend(now, -1)),
    (
        re.compile(r"\b(?:(?:in )?early|(?:(?:at|in) )?(?:the )?(?:start|beginning) of) (last|this|next) month\b"),
        lambda m, now: _early(_months_back(now, _EN_SHIFT[m[1]])),
    ),
    (
        re.compile(r"\b(?:(?:in )?late|(?:(?:at|in) )?(?:the )?end of) (last|this|next) month\b"),
        lambda m, now: _late(_months_back(now, _EN_SHIFT[m[1]])),
    ),
    (re.compile(r"\bthe week before last\b"), lambda m, now: _week(now, 2)),
    (re.compile(r"\bthe month before last\b"), lambda m, now: _months_back(now, 2)),
    # A bare "Friday" may be any Friday, past or ahead: only "last/this/next Friday" count.
    (
        re.compile(rf"\b(last|this|next) ({_WEEKDAY})\b"),
        lambda m, now: _en_weekday(now, m[1], WEEKDAYS[m[2]]),
    ),
    (re.compile(r"\bthis week\b"), lambda m, now: _week(now, 0)),
    (re.compile(r"\blast week\b"), lambda m, now: _week(now, 1)),
    (re.compile(r"\bnext week\b"), lambda m, now: _week(now, -1)),
    (re.compile(r"\bthis month\b"), lambda m, now: _months_back(now, 0)),
    (re.compile(r"\blast month\b"), lambda m, now: _months_back(now, 1)),
    (re.compile(r"\bnext month\b"), lambda m, now: _months_back(now, -1)),
    (re.compile(r"\bthis year\b"), lambda m, now: _year(now.year)),
    (re.compile(r"\blast year\b"), lambda m, now: _year(now.year - 1)),
    (re.compile(r"\bnext year\b"), lambda m, now: _year(now.year + 1)),
    (
        re.compile(r"\b(?:in the )?(?:past|last) (\d+) (day|week|month|year)s?\b"),
        lambda m, now: (_day(now) - timedelta(days=int(m[1]) * _UNITS[m[2]]), _day(now) + timedelta(days=1)),
    ),
    (
        re.compile(r"\b(?:a )?(couple|few|several) (?:of )?(day|week|month|year)s? ago\b"),
        lambda m, now: _vaguely_ago(now, m[1], m[2]),
    ),
    (
        re.compile(r"\b(\d+|a|an|one|two|three) (day|week|month|year)s? ago\b"),
        lambda m, now: _ago(now, _count(m[1]), m[2]),
    ),
    (
        re.compile(rf"{_NOT_A_SPAN}\bin (\d+|two|three) (day|week|month|year)s?\b"),
        lambda m, now: _ahead(now, _count(m[1]), m[2]),
    ),
    (
        re.compile(rf"\b(?:on )?(\d{{1,2}})(?:st|nd|rd|th)? ({_MONTH}),? (\d{{4}})\b"),
        lambda m, now: _date(int(m[3]), MONTHS[m[2]], int(m[1]), now),
    ),
    (
        re.compile(rf"\b(?:on )?({_MONTH}) (\d{{1,2}})(?:st|nd|rd|th)?,? (\d{{4}})\b"),
        lambda m, now: _date(int(m[3]), MONTHS[m[1]], int(m[2]), now),
    ),
    (
        re.compile(rf"\b(?:in |during )?({_MONTH}),? (\d{{4}})\b"),
        lambda m, now: _month(int(m[2]), MONTHS[m[1]]),
    ),
    (
        re.compile(rf"\b(?:on )?(\d{{1,2}})(?:st|nd|rd|th)? ({_MONTH})\b"),
        lambda m, now: _date(None, MONTHS[m[2]], int(m[1]), now),
    ),
    (
        re.compile(rf"\b(?:on )?({_MONTH}) (\d{{1,2}})(?:st|nd|rd|th)?\b"),
        lambda m, now: _date(None, MONTHS[m[1]], int(m[2]), now),
    ),
    # A bare "may" is a verb far more often than a month: only "in/during May" counts.
    (re.compile(rf"\b(?:in|during) ({_MONTH})\b"), lambda m, now: _latest_month(now, MONTHS[m[1]])),
    (re.compile(r"\b(?:in|during) ((?:19|20)\d\d)\b"), lambda m, now: _year(int(m[1]))),
    # Plans in general, last of the English rules: "what's coming up next week" is next week.
    (
        re.compile(r"\b(?:(?:in )?the (?:coming|next few) (?:days|weeks)|coming up(?! with)|upcoming)\b"),
        lambda m, now: _upcoming(now),
    ),
    # Chinese
    (re.compile("大后天"), lambda m, now: _days(now, -3)),
    (re.compile("(?<![之以然])后天"), lambda m, now: _days(now, -2)),  # not 之后/以后/然后 + 天气
    (re.compile("明天|明晚|明早|明日"), lambda m, now: _days(now, -1)),
    (re.compile("前天"), lambda m, now: _days(now, 2)),
    (re.compile("昨天|昨晚|昨日"), lambda m, now: _days(now, 1)),
    (re.compile("今天|今晚|今早|今日"), lambda m, now: _days(now, 0)),
    (re.compile("上上个?周末"), lambda m, now: _weekend(now, 2)),
    (re.compile("上周末|上个周末"), lambda m, now: _weekend(now, 1)),
    (re.compile("这个?周末|本周末"), lambda m, now: _weekend(now, 0)),
    (re.compile(f"{_ZH_NEXT}下个?周末"), lambda m, now: _weekend(now, -2)),
    (re.compile(f"{_ZH_NEXT}个?周末"), lambda m, now: _weekend(now, -1)),
    (
        re.compile(f"{_ZH_WHICH}个?(?:周([一二三四五六日])|(?:星期|礼拜)([一二三四五六日天])){_NOT_A_WEEKDAY}"),
        lambda m, now: _zh_weekday(now, m[1], m[2] or m[3]),
    ),
    (re.compile("上上个?(?:周|星期|礼拜)"), lambda m, now: _week(now, 2)),
    (re.compile("这周|本周|这个星期|这星期|这礼拜"), lambda m, now: _week(now, 0)),
    (re.compile("上周|上个星期|上星期|上礼拜|上个礼拜"), lambda m, now: _week(now, 1)),
    (re.compile(f"{_ZH_NEXT}下个?(?:周|星期|礼拜)"), lambda m, now: _week(now, -2)),
    (re.compile(f"{_ZH_NEXT}个?(?:周|星期|礼拜)(?!期)"), lambda m, now: _week(now, -1)),  # not 下周期
    (re.compile(f"{_ZH_WHICH}个?月初"), lambda m, now: _early(_months_back(now, _ZH_SHIFT[m[1]]))),
    (re.compile(f"{_ZH_WHICH}个?月[底末]"), lambda m, now: _late(_months_back(now, _ZH_SHIFT[m[1]]))),
    (re.compile("上上个?月"), lambda m, now: _months_back(now, 2)),
    (re.compile("这个月|本月"), lambda m, now: _months_back(now, 0)),
    (re.compile("上个月|上月"), lambda m, now: _months_back(now, 1)),
    (re.compile(f"{_ZH_NEXT}下个?月"), lambda m, now: _months_back(now, -2)),
    (re.compile(f"{_ZH_NEXT}个?月"), lambda m, now: _months_back(now, -1)),
    (re.compile("今年"), lambda m, now: _year(now.year)),
    (re.compile("去年"), lambda m, now: _year(now.year - 1)),
    (re.compile("前年"), lambda m, now: _year(now.year - 2)),
    (re.compile("明年"), lambda m, now: _year(now.year + 1)),
    # 几天前, 前几天: "a few days ago"; but 十几天前 is "a dozen or more days ago", left alone.
    (
        re.compile("(?<!十)几个?(天|周|星期|礼拜|月|年)(?:以)?前|前几个?(天|周|星期|礼拜|月|年)"),
        lambda m, now: _vaguely_ago(now, "几", m[1] or m[2]),
    ),
    (
        re.compile(rf"({_ZH_NUM})(天|周|星期|个月|年)(?:以)?前"),
        lambda m, now: _ago(now, zh_number(m[1]), m[2]),
    ),
    (
        re.compile(rf"最近({_ZH_NUM})(天|周|个星期|个月|年)"),
        lambda m, now: (
            _day(now) - timedelta(days=zh_number(m[1]) * _UNITS[m[2].removeprefix("个")]),
            _day(now) + timedelta(days=1),
        ),
    ),
    (
        re.compile(rf"(\d{{4}})年({_ZH_NUM})月({_ZH_NUM})[日号]"),
        lambda m, now: _date(int(m[1]), zh_number(m[2]), zh_number(m[3]), now),
    ),
    (re.compile(rf"(\d{{4}})年({_ZH_NUM})月"), lambda m, now: _month(int(m[1]), zh_number(m[2]))),
    (
        re.compile(rf"({_ZH_NUM})月({_ZH_NUM})[日号]"),
        lambda m, now: _date(None, zh_number(m[1]), zh_number(m[2]), now),
    ),
    (re.compile(rf"({_ZH_NUM})月份?"), lambda m, now: _latest_month(now, zh_number(m[1]))),
    (re.compile(r"(\d{4})年"), lambda m, now: _year(int(m[1]))),
    # Plans in general, last of the Chinese rules: "接下来下周" is next week.
    (re.compile("接下来|未来几天"), lambda m, now: _upcoming(now)),
]

_RECENT = re.compile(
    r"\b(?:last time|recently|lately|latest|most recent(?:ly)?|the last (?:thing|time|one))\b"
    # "when was I last at the gym"; "when was the last time" is left to "the last time" above
    r"|\b(?:when|where|what|who) (?:did|was|were) (?!the\b)\w+ last\b|上次|上回|最后一次|最近|近来|最新"
)


def _count(word: str) -> int:
    return {"a": 1, "an": 1, "one": 1, "two": 2, "three": 3}.get(word) or int(word)


def _ago(now: datetime, count: int, unit: str) -> tuple[datetime, datetime]:
    """'3 days ago' is that day; '2 weeks ago' that day give or take a third of the span."""
    return _around(now, count * _UNITS[unit], _UNITS[unit])


def _ahead(now: datetime, count: int, unit: str) -> tuple[datetime, datetime]:
    """'in 3 days' is that day; 'in 2 weeks' that day give or take a third of the span."""
    return _around(now, -count * _UNITS[unit], _UNITS[unit])


def _around(now: datetime, back: int, unit_days: int) -> tuple[datetime, datetime]:
    """The day ``back`` days ago (ahead if negative). Counted in weeks or more, nobody means the
    day itself: a third of the span either side."""
    if unit_days == 1:
        return _days(now, back)
    slack = abs(back) // 3
    centre = _day(now) - timedelta(days=back)
    return centre - timedelta(days=slack), centre + timedelta(days=slack + 1)


def _vaguely_ago(now: datetime, vague: str, unit: str) -> tuple[datetime, datetime]:
    """'a couple of days ago' is 2 days back give or take one, 'a few weeks ago' 3 weeks back give
    or take two: a vague count is wider than '3 weeks ago', and never reaches today."""
    count, slack = _VAGUE[vague]
    days = _UNITS[unit]
    centre = _day(now) - timedelta(days=count * days)
    return centre - timedelta(days=slack * days), centre + timedelta(days=slack * days + 1)


def _on_clock(t: datetime, zone: tzinfo | None) -> datetime:
    """A naive time of the query's window, on the clock it was asked by. OverflowError when its UTC
    time lies outside what a datetime holds ("last year" asked in year 2 at +05:00 starts in year
    0 in UTC): no database driver could send it."""
    placed = t.replace(tzinfo=zone)
    if zone is not None:
        placed.astimezone(UTC)
    return placed


def time_intent(query: str, now: datetime) -> TimeIntent:
    """The first time expression of the query as a window (in now's timezone), a preference for
    recent memories, and the query without those words."""
    text = query.lower()
    window = None
    for pattern, resolve in _RULES:
        match = pattern.search(text)
        if match is None:
            continue
        try:
            span = resolve(match, now.replace(tzinfo=None))
            if span is None:
                continue
            start, end = (_on_clock(t, now.tzinfo) for t in span)
        except (ValueError, OverflowError):  # a month 13, a year 0 or 10000 (in UTC too): not a time
            continue
        window = TimeWindow(start, end, query[match.start() : match.end()])
        text = text[: match.start()] + " " + text[match.end() :]
        query = query[: match.start()] + " " + query[match.end() :]
        break
    recent = _RECENT.search(text)
    if recent is not None:
        query = query[: recent.start()] + " " + query[recent.end() :]
    rest = re.sub(r"\s+", " ", query).strip()
    return TimeIntent(window, recent is not None and window is None, rest)
