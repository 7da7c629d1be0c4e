"""What a short statement claims, read by rules (no LLM): who it is about, which attribute, which
value, said or denied, and whether it announces a change.

    "I like Americano"              -> user · beverage · {americano} (+)
    "我现在不喝咖啡了，改喝茶"          -> user · beverage · change: {coffee} -> {tea}
    "My sister likes cats"          -> user/sister · pet · {cat} (+)
    "The office wifi password is X" -> user/office · password · {x} (one value at a time)

A slot is subject + attribute. Two statements of one slot with the same value say the same thing
in any wording or language the lexicon knows; a new value of a one-value slot (where one lives,
a password, a name) replaces the old one; a change ("switched from coffee to tea") retires every
statement of the old value. Anything the rules cannot read is compared by its words, carefully:
two statements whose value-bearing words differ are never the same fact.
"""

from __future__ import annotations

import re
import unicodedata
from dataclasses import dataclass, field, replace

from engram.domain.identifiers import extract_identifiers
from engram.domain.lexicon import concepts_in, domain_of, is_domain, lineage, people_in, within
from engram.domain.tokenize import EN_STOPWORDS, query_tokens

_CJK = re.compile(r"[\u3400-\u9fff]")

# Said before or after the fact without adding to it.
_LEAD_FILLER = re.compile(
    r"^(?:(?:oh|ah|well|so|and|also|btw|by the way|actually|anyway|um+|uh+|hmm+|ok(?:ay)?|yeah|yes|right|"
    r"just so you know|fyi|fun fact|"
    r"哦|噢|对了|嗯+|那个|其实|顺便说一下|顺便说|顺便|还有|另外|话说|就是)[\s,，、:：!！.。]*)+",
    re.IGNORECASE,
)
_TRAIL_FILLER = re.compile(
    r"(?:[\s,，]*(?:lol|haha+|hehe|:\)|哈哈+|呵呵|嘿嘿|啦|呀|哦|呢|吧|啊))+[\s!！.。~～]*$", re.I
)

# The user themself.
_SELF_EN = re.compile(r"\b(?:i|i'm|im|i've|i'd|i'll|me|my|mine|myself|the user|user|the user's|user's)\b", re.I)
_SELF_ZH = re.compile("用户|我们|我")

# Words that strengthen, hedge or place in time without changing the fact.
_LIGHT_EN = frozenset(
    query_tokens(
        "really very so much truly quite absolutely totally definitely super pretty still also too just now "
        "currently these days nowadays lately recently a lot lots kind sort of enjoy enjoys like likes love loves "
        "adore prefer prefers fan big huge drinking drink drinks eating eat eats having have has get "
        "favorite favourite thing things stuff user"
    )
)
# How often ("every morning", "每天") is part of a fact: not light.
_LIGHT_ZH = re.compile(
    "现在|目前|都|也|还|很|挺|非常|特别|真的|超级|十分|比较|最近|近来|这些天|喜欢|爱|热爱|偏爱|最爱|钟爱|喝|吃|"
    "的|了|是|啊|呢|吧|哦|呀|啦|嘛|就|会|要|在|着|过|用户|我们|我"
)

_NEGATION_EN = re.compile(
    r"\b(?:not|no|never|don't|dont|doesn't|doesnt|didn't|isn't|aren't|won't|can't|cannot|hate|hates|dislike|"
    r"dislikes|no longer|stopped|quit|gave up)\b",
    re.I,
)
_NEGATION_ZH = re.compile("不|没|别|讨厌|戒")

_CHANGE = re.compile(
    r"\b(?:switched|switch|switching|changed|change|now prefer|no longer|not anymore|any ?more|instead|moved|"
    r"relocated|from now on|stopped|quit|gave up|gone|these days|nowadays)\b|换成|换了|改成|改喝|改吃|改用|改去|"
    r"不再|现在改|搬到|搬去|搬家|从今天起|以后|戒了|戒掉|不.{1,4}了",
    re.I,
)
# A plan or an intention: true of the future, so it retires nothing now.
_FUTURE = re.compile(
    r"\b(?:will|going to|gonna|plan(?:ning)? to|intend(?:ing)? to|about to|thinking (?:of|about)|"
    r"(?:is|am|are) (?:moving|relocating|switching|changing|starting|quitting)|next (?:week|month|year)|"
    r"in (?:january|february|march|april|may|june|july|august|september|october|november|december) \d{4})\b"
    r"|打算|准备|计划|将要|即将|想要|要搬|下个?月|下周|明年|以后会",
    re.I,
)
# Where the old value ends and the new one starts in a change ("from coffee to tea", "从咖啡换成了茶").
_CHANGE_OLD = re.compile(
    r"\b(?:from|no longer|stopped|quit|gave up|instead of|rather than|not)\b|从|不再|不喝|不吃|不用|不去|戒了|戒掉|不",
    re.I,
)
_CHANGE_NEW = re.compile(
    r"\b(?:to|for|now|into)\b|换成|换了|改成|改喝|改吃|改用|改去|改|现在|搬到|搬去|变成|成了", re.I
)

# Chinese numbers with a unit or a multiplier: "六千人", "两只猫", "三个孩子" (not "一起", "一直").
_ZH_NUMBER = re.compile(
    "[零一二两三四五六七八九十百千万亿]+(?=[个人岁年月日号天周次只本块元米斤公里层楼倍分秒家套件条张位名台辆所])|"
    "[零一二两三四五六七八九]*[十百千万亿][零一二两三四五六七八九十百千万亿]*"
)
_ZH_DIGIT = {"零": 0, "一": 1, "二": 2, "两": 2, "三": 3, "四": 4, "五": 5, "六": 6, "七": 7, "八": 8, "九": 9}
_ZH_UNIT = {"十": 10, "百": 100, "千": 1000, "万": 10_000, "亿": 100_000_000}
_NUMBER = re.compile(r"\d+(?:[.,]\d+)?")


@dataclass(frozen=True)
class Predicate:
    attribute: str | None  # None: the attribute is the value's domain (beverage, pet...)
    single: bool  # one value at a time (where one lives) or many (what one likes)
    negative: bool
    pattern: re.Pattern[str]


def _en(words: str) -> re.Pattern[str]:
    return re.compile(rf"\b(?:{words})\b", re.I)


# Longer and more specific first: the first predicate found in a statement is its predicate.
_PREDICATES = [
    Predicate("allergy", False, False, re.compile(r"\ballergic to\b|对(?=.{1,12}过敏)|过敏", re.I)),
    Predicate(
        "residence",
        True,
        False,
        _en(
            r"live in|lives in|living in|reside in|resides in|based in|moved to|"
            r"moved from|moved away from|relocated to|relocated from|moving to|"
            r"move to|home is in"
        ),
    ),
    Predicate(
        "residence", True, False, re.compile("住在|定居在|定居|家住|住|搬到了|搬到|搬去了|搬去|搬家到|老家在|家在")
    ),
    Predicate(
        "employer",
        True,
        False,
        _en(
            r"work at|works at|working at|work for|works for|working for|"
            r"employed at|employed by|job at|joined"
        ),
    ),
    Predicate(
        "employer", True, False, re.compile("就职于|任职于|入职了|入职|跳槽到|跳槽去|加入了|在(?=.{1,15}(?:工作|上班))")
    ),
    Predicate("occupation", True, False, _en(r"work as|works as|working as|job is|profession is|occupation is")),
    Predicate("occupation", True, False, re.compile("职业是|工作是|当上了|做的是|是一名|是一个|是个")),
    Predicate("name", True, False, _en(r"name is|names are|called|named|goes by")),
    Predicate("name", True, False, re.compile("名字是|名字叫|叫做|名叫|叫")),
    Predicate(
        None,
        False,
        True,
        _en(
            r"don't like|do not like|doesn't like|does not like|dislike|dislikes|"
            r"hate|hates|can't stand|cannot stand|not a fan of|don't drink|don't eat|"
            r"no longer drink|no longer eat|stopped drinking|stopped eating|gave up|quit"
        ),
    ),
    Predicate(None, False, True, re.compile("不喜欢|不爱|讨厌|受不了|反感|不喝|不吃|戒了|戒掉")),
    Predicate(
        None,
        False,
        False,
        _en(
            r"like|likes|liked|love|loves|loved|enjoy|enjoys|adore|adores|prefer|prefers|"
            r"am a fan of|is a fan of|am into|is into|fond of|favou?rite \w+ is|"
            r"drink|drinks|drinking|eat|eats|eating|play|plays|playing|have|has|own|owns|"
            r"keep|keeps|go|goes|switched to|changed to"
        ),
    ),
    Predicate(
        None,
        False,
        False,
        re.compile(
            "最喜欢|喜欢|热爱|偏爱|偏好|钟爱|爱喝|爱吃|爱|常喝|常吃|喝|吃|养了|养|玩|打|练|换成了|换成|改喝|改吃|改成"
        ),
    ),
]
# "X is Y" statements about a named attribute: one value at a time ("my phone number is ...").
_COPULA = re.compile(
    r"^(?P<np>.{2,80}?)\s+(?:is|are|was|=)\s+(?P<value>.+)$|^(?P<np_zh>.{2,40}?)(?:是|为|：|:)(?P<value_zh>.+)$", re.I
)
# Attribute nouns, so a copula's attribute reads the same in either language.
_ATTRIBUTES = {
    "password": r"password|passcode|pin|密码",
    "wifi": r"wi-?fi|wlan|无线网",
    "phone": r"phone number|phone|mobile|cell|telephone|手机号码|手机号|电话号码|电话|手机",
    "email": r"e-?mail address|e-?mail|邮箱地址|邮箱|电子邮件",
    "address": r"address|住址|地址",
    "birthday": r"birthday|date of birth|birth date|生日|出生日期",
    "name": r"name|名字|姓名",
    "age": r"age|年龄|岁数",
    "job": r"job|occupation|profession|职业|工作",
    "company": r"employer|company|公司|单位",
    "school": r"school|university|college|学校|大学",
    "major": r"major|专业",
    "degree": r"degree|学历|学位",
    "car": r"car|汽车|车",
    "blood type": r"blood type|血型",
    "height": r"height|身高",
    "weight": r"weight|体重",
    "hometown": r"hometown|老家|家乡",
    "floor": r"floor|楼层",
    "colour": r"colou?r|颜色",
}
_ATTRIBUTE_RE = re.compile("|".join(f"(?P<a{i}>{p})" for i, p in enumerate(_ATTRIBUTES.values())), re.I)


@dataclass(frozen=True)
class Claim:
    text: str
    language: str
    subject: str  # "user", "user/sister", "alice", "user/office"...
    attribute: str | None = None
    single: bool = False
    negated: bool = False
    values: frozenset[str] = frozenset()  # concepts, or the value's own words
    change: bool = False
    future: bool = False  # a plan ("is moving to Shenzhen next month"): it changes nothing yet
    old_values: frozenset[str] = frozenset()
    new_values: frozenset[str] = frozenset()
    content: frozenset[str] = field(default_factory=frozenset)  # value-bearing words, concepts canonical
    numbers: frozenset[str] = frozenset()

    @property
    def slot(self) -> str | None:
        return f"{self.subject}|{self.attribute}" if self.attribute else None


def strip_filler(text: str) -> str:
    """'Oh and I really like americano coffee lol' -> 'I really like americano coffee'."""
    original = unicodedata.normalize("NFKC", text).strip()
    stripped = _TRAIL_FILLER.sub("", _LEAD_FILLER.sub("", original)).strip(" ,，.。!！~～")
    return stripped or original


def numbers_of(text: str) -> frozenset[str]:
    """Every number (Arabic or Chinese: "六千" is 6000) and identifier (codes, emails) in a text:
    two statements that differ here state different facts, or a new value of one."""
    found = {n.replace(",", ".").lstrip("0") or "0" for n in _NUMBER.findall(text)} | set(extract_identifiers(text))
    for run in _ZH_NUMBER.findall(text):
        value = zh_to_int(run)
        if value is not None:
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


def _language(text: str) -> str:
    return "zh" if len(_CJK.findall(text)) >= len(re.findall(r"[A-Za-z]+", text)) else "en"


def _people(text: str) -> list[str]:
    return sorted({m.concept for m in people_in(text)})


_NOT_NAMES = frozenset(
    "now today yesterday tonight tomorrow recently lately currently actually also then these those well so and but "
    "oh hey hi yes no ok okay sure still always usually sometimes every last next this".split()
)


def _proper_names(prefix: str) -> list[str]:
    """Names in the words before the predicate ("Alice likes cats"): capitalised, not the user."""
    words = {w.lower() for w in re.findall(r"\b[A-Z][a-z]+\b", prefix)}
    return sorted(w for w in words if w not in EN_STOPWORDS and w not in _NOT_NAMES and not _SELF_EN.fullmatch(w))


def _subject(prefix: str, language: str) -> str:
    """Who the words before the predicate name: the user, one of theirs, or someone else."""
    people = _people(prefix)
    if people:
        owner = "user" if (_SELF_EN.search(prefix) or _SELF_ZH.search(prefix) or "our" in prefix.lower()) else ""
        return "/".join(filter(None, [owner, *people]))
    if language == "en":
        names = _proper_names(prefix)
        return "/".join(names) if names else "user"
    for m in sorted(concepts_in(prefix), key=lambda m: -m.start):
        prefix = prefix[: m.start] + prefix[m.end :]
    rest = _CHANGE_OLD.sub("", _LIGHT_ZH.sub("", _SELF_ZH.sub("", prefix)))
    rest = re.sub(r"[^\u3400-\u9fff]", "", rest)
    return rest if rest else "user"


def _content(text: str, language: str) -> frozenset[str]:
    """The words that carry the fact: concepts as their canonical names, domain words dropped
    when a kind of them is named ("americano coffee" is "americano"), light words dropped."""
    mentions = concepts_in(text)
    named = {m.concept for m in mentions}
    kept = {c for c in named if not any(o != c and within(o, c) for o in named)}
    rest = text
    for m in sorted(mentions, key=lambda m: -m.start):
        rest = rest[: m.start] + " " + rest[m.end :]
    for m in sorted(people_in(rest), key=lambda m: -m.start):
        kept.add("@" + m.concept)
        rest = rest[: m.start] + " " + rest[m.end :]
    rest = _SELF_EN.sub(" ", rest)
    rest = _LIGHT_ZH.sub(" ", _SELF_ZH.sub(" ", rest)) if _CJK.search(rest) else rest
    rest = _NEGATION_EN.sub(" ", _NEGATION_ZH.sub(" ", rest))
    words = {t for t in query_tokens(rest) if t not in _LIGHT_EN and len(t) > 0}
    return frozenset(kept | words)


def _value(text: str) -> frozenset[str]:
    """A value as concepts when the lexicon names it (the most specific), else its own words."""
    named = [m.concept for m in concepts_in(text)]
    specific = {c for c in named if not any(o != c and within(o, c) for o in named) and not is_domain(c)}
    if specific:
        return frozenset(specific)
    words = {t for t in query_tokens(_LIGHT_ZH.sub(" ", text)) if t not in _LIGHT_EN}
    return frozenset(words)


def _copula_attribute(np: str) -> str | None:
    found = [next(k for k, v in m.groupdict().items() if v) for m in _ATTRIBUTE_RE.finditer(np)]
    if not found:
        return None
    names = list(_ATTRIBUTES)
    return " ".join(sorted({names[int(k[1:])] for k in found}))


def _change_values(text: str) -> tuple[frozenset[str], frozenset[str]]:
    """Old and new values of a change: "from coffee to tea", "不喝咖啡了，改喝茶", "tea instead of
    coffee", "no longer X". The old value runs from its marker to the next new-value marker."""
    mentions = concepts_in(text)
    old_marker = _CHANGE_OLD.search(text)
    if old_marker is None:
        return frozenset(), frozenset(m.concept for m in mentions) or _value(text)
    next_new = next((m for m in _CHANGE_NEW.finditer(text, old_marker.end())), None)
    start, end = old_marker.end(), next_new.start() if next_new is not None else len(text)
    old = {m.concept for m in mentions if start <= m.start < end} or set(_value(text[start:end]))
    new = {m.concept for m in mentions if not start <= m.start < end}
    if not new and next_new is not None:
        new = set(_value(text[next_new.end() :]))
    return frozenset(old - new), frozenset(new)


def read_claim(text: str) -> Claim:
    """The claim of one statement (see the module's docstring)."""
    text = strip_filler(text)
    language = _language(text)
    lowered = text.lower() if language == "en" else text
    negated = bool(_NEGATION_EN.search(lowered) if language == "en" else _NEGATION_ZH.search(lowered))
    change_cue = _CHANGE.search(lowered)
    old, new = _change_values(lowered) if change_cue else (frozenset(), frozenset())
    future = bool(_FUTURE.search(lowered))
    base = Claim(
        text,
        language,
        "user",
        negated=negated,
        change=change_cue is not None and not future,
        future=future,
        old_values=old,
        new_values=new,
        content=_content(lowered, language),
        numbers=numbers_of(text),
    )
    for predicate in _PREDICATES:
        match = predicate.pattern.search(lowered)
        if match is None:
            continue
        # Who it is about: the words before the predicate, or before a change cue if earlier.
        cut_at = min([match.start(), *(m.start() for m in (change_cue, _CHANGE_OLD.search(lowered)) if m)])
        value_text = lowered[match.end() :]
        values = _value(value_text)
        attribute = predicate.attribute or _domain(value_text, lowered, values)
        return replace(
            base,
            subject=_subject(text[:cut_at], language),
            attribute=attribute,
            single=predicate.single,
            negated=negated or predicate.negative,
            values=values,
        )
    if change_cue is not None and (old or new):  # "I switched from coffee to tea"
        return replace(
            base,
            subject=_subject(text[: change_cue.start()], language),
            attribute=_domain("", lowered, old | new),
            values=new,
        )
    copula = _COPULA.match(lowered)
    if copula is not None:
        np = copula.group("np") or copula.group("np_zh") or ""
        value_text = copula.group("value") or copula.group("value_zh") or ""
        attribute = _copula_attribute(np)
        if attribute is not None:
            values = _value(value_text) | numbers_of(value_text)
            return replace(base, subject=_subject(np, language), attribute=attribute, single=True, values=values)
    return base


def _domain(value_text: str, text: str, values: frozenset[str]) -> str | None:
    """What a liking or a habit is about: the domain of the thing named (coffee: beverage), or the
    thing itself when the lexicon does not know it."""
    concepts = [m.concept for m in concepts_in(value_text) or concepts_in(text)]
    if concepts:
        return domain_of(concepts[0])
    return "likes:" + " ".join(sorted(values)) if values else None


def lineage_overlap(a: frozenset[str], b: frozenset[str]) -> bool:
    """Some value of one is, or is a kind of, some value of the other (americano and coffee)."""
    return any(x == y or within(x, y) or within(y, x) for x in a for y in b)


def states_old_value(existing: Claim, change: Claim) -> bool:
    """Whether ``existing`` says what ``change`` leaves behind (a kind of it counts: Americano for
    coffee); with no old value named, any other value of the slot."""
    if change.old_values:
        return any(within(v, old) or v == old for v in existing.values for old in change.old_values) or bool(
            change.old_values & existing.content
        )
    return bool(existing.values) and not lineage_overlap(existing.values, change.new_values)


__all__ = ["Claim", "lineage", "numbers_of", "read_claim", "strip_filler"]
