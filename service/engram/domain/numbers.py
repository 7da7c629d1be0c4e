"""Numbers and dates in a statement (pure): Arabic, Chinese ("六千" is 6000) and English words
("two"); dates apart, because when something happened is not what it is."""

from __future__ import annotations

import re
from functools import lru_cache

from engram.domain.identifiers import extract_identifiers

_ZH_NUMBER = re.compile(
    "[零一二两三四五六七八九十百千万亿]+(?=[个人岁年月日号天周次只本块元米斤公里层楼倍分秒家套件条张位名台辆所])|"
    "[零一二两三四五六七八九]*[十百千万亿][零一二两三四五六七八九十百千万亿]*"
)
_ZH_DIGIT = {"零": 0, "一": 1, "二": 2, "两": 2, "三": 3, "四": 4, "五": 5, "六": 6, "七": 7, "八": 8, "九": 9}
_ZH_UNIT = {"十": 10, "百": 100, "千": 1000, "万": 10_000, "亿": 100_000_000}
_NUMBER = re.compile(r"\d+(?:[.,]\d+)?")


# When something happened is not what it is: dates are compared apart from other numbers.
_DATE = re.compile(
    r"\b\d{4}[-/.]\d{1,2}[-/.]\d{1,2}\b|\d{4}年(?:\d{1,2}月(?:\d{1,2}[日号])?)?(?:那周)?|\d{1,2}月\d{1,2}[日号]|"
    r"[零一二两三四五六七八九十]{1,3}月(?:[零一二两三四五六七八九十]{1,3}[日号])?|"
    r"\b(?:in|on|since|by) (?:(?:january|february|march|april|may|june|july|august|september|october|november|"
    r"december) )?(?:19|20)\d\d\b|\bin the week of \S+",
    re.I,
)


def dates_of(text: str) -> frozenset[str]:
    return frozenset(m.group(0).lower() for m in _DATE.finditer(text))


_EN_NUMBERS = {
    word: value
    for value, word in enumerate(
        "zero _ two three four five six seven eight nine ten eleven twelve thirteen fourteen fifteen sixteen "
        "seventeen eighteen nineteen twenty".split()
    )
    if word != "_"
} | {"thirty": 30, "forty": 40, "fifty": 50, "sixty": 60, "seventy": 70, "eighty": 80, "ninety": 90, "hundred": 100}
_EN_NUMBER = re.compile(r"\b(" + "|".join(_EN_NUMBERS) + r")\b", re.I)


@lru_cache(maxsize=8192)
def numbers_of(text: str) -> frozenset[str]:
    """Every number (Arabic, Chinese: "六千" is 6000, or English words: "two") and identifier (codes,
    emails) in a text, but its dates: two statements that differ here state different facts, or a
    new value of one. "One" and "一只" are articles ("a"), not counts."""
    text = _DATE.sub(" ", text)
    found = {n.replace(",", ".").lstrip("0") or "0" for n in _NUMBER.findall(text)} | set(extract_identifiers(text))
    found |= {str(_EN_NUMBERS[w.lower()]) for w in _EN_NUMBER.findall(text)}
    for match in _ZH_NUMBER.finditer(text):
        value = zh_to_int(match.group(0))
        if value is not None and not (value == 1 and match.group(0) == "一"):
            found.add(str(value))
    return frozenset(found)


def zh_to_int(run: str) -> int | None:
    """'六千' 6000, '十二' 12, '两' 2, '三百五十' 350, '一万二千' 12000."""
    total, section, digit = 0, 0, None
    for ch in run:
        if ch in _ZH_DIGIT:
            digit = _ZH_DIGIT[ch]
        elif ch in ("万", "亿"):
            section = (section + (digit or 0)) or 1
            total += section * _ZH_UNIT[ch]
            section, digit = 0, None
        elif ch in _ZH_UNIT:
            section += (1 if digit is None else digit) * _ZH_UNIT[ch]
            digit = None
        else:
            return None
    return total + section + (digit or 0)
