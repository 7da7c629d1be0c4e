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
from functools import lru_cache

from engram.domain.identifiers import extract_identifiers
from engram.domain.lexicon import concepts_in, domain_of, is_domain, lineage, people_in, topics_in, within
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
    r"\b(?:switched|switch|switching|changed|change|now prefer|no longer|not anymore|any ?more|no more|instead|"
    r"moved|relocated|from now on|stop|stopped|quit|gave up|given up|gone|these days|nowadays|sold|split up|"
    r"broke up|left|replaced|upgraded|graduated|finished|started|began|now)\b|换成|换了|改成|改喝|改吃|改用|改去|"
    r"不再|现在改|搬到|搬去|搬家|从今天起|以后|戒了|戒掉|分手|离职|辞职|跳槽|卖了|毕业|开始|转到|现在|已经|不.{1,4}了",
    re.I,
)
# A change announced outright: enough to retire what an older statement of the same topic says.
_STRONG_CHANGE = re.compile(
    r"\b(?:switched|changed|moved|relocated|no longer|not anymore|any ?more|no more|instead|now|nowadays|"
    r"these days|quit|gave up|given up|sold|stopped|replaced|upgraded)\b|换成|换了|改成|改用|改去|不再|现在|已经|"
    r"转到|戒了|戒掉|搬到|搬去|卖了",
    re.I,
)
_PRONOUN = {"his": "he", "him": "he", "her": "she", "their": "they", "them": "they", "他们": "they", "她们": "they"}
_THIRD_PERSON = re.compile(r"\b(?:he|she|they|his|her|their|him|them)\b|他们|她们|他|她", re.I)
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
    r"\b(?:from|no longer|no more|stop|stopped|quit|gave up|given up|instead of|rather than|not)\b|"
    r"从|不再|不喝|不吃|不用|不去|戒了|戒掉|不",
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
    Predicate("name", True, False, _en(r"name is|names are|called|named|goes by|go by")),
    Predicate("name", True, False, re.compile("名字是|名字叫|叫做|名叫|叫")),
    # A favourite is one thing at a time ("my favourite colour is yellow now" replaces red).
    Predicate(
        "favourite", True, False, re.compile(r"\bfavou?rite\s+\w+(?:\s+\w+)?\s+(?:is|are)\b|最喜欢的.{1,8}?是", re.I)
    ),
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
            r"am a fan of|is a fan of|am into|is into|fond of|hooked on|addicted to|obsessed with|"
            r"drink|drinks|drinking|eat|eats|eating|play|plays|playing|have|has|own|owns|"
            r"keep|keeps|go|goes|switched to|changed to"
        ),
    ),
    Predicate(
        None,
        False,
        False,
        re.compile("最喜欢|喜欢|热爱|偏爱|偏好|钟爱|爱喝|爱吃|爱|常喝|常吃|喝|吃|养了|养|玩|打|练|改喝|改吃"),
    ),
]
# "X is Y" statements about a named attribute: one value at a time ("my phone number is ...").
_COPULA = re.compile(
    r"^(?P<np>.{2,80}?)\s+(?:is|are|was|=)\s+(?P<value>.+)$|^(?P<np_zh>.{2,40}?)(?:是|为|：|:)(?P<value_zh>.+)$", re.I
)
# "changed my X to Y", "把X改成Y": X is the attribute, Y its new value.
_SET_TO = re.compile(
    r"\b(?:changed|switched|updated|set|reset)\s+(?P<np>.{2,60}?)\s+(?:to|into)\s+(?P<value>.+)$"
    r"|(?:把)?(?P<np_zh>[^，,。]{2,30}?)(?:改成|换成|改为|换为|更新为|设成)了?(?P<value_zh>.+)$",
    re.I,
)
_CLAUSE_SPLIT = re.compile(r"[;；,，]\s*|\s+(?:and|so|but)\s+(?=(?:i|i'm|i've|my|we|our)\b)", re.I)
_SURNAME_NAME = re.compile(
    "^\\s*[王李张刘陈杨黄赵吴周徐孙马朱胡郭何高林罗郑梁谢宋唐许韩冯邓曹彭曾肖田董袁潘于蒋蔡余杜叶程苏魏吕丁任沈姚卢姜崔钟谭陆汪范金][\\u3400-\\u9fff]{1,2}\\s*$"
)
# Attribute nouns, so a copula's attribute reads the same in either language.
_ATTRIBUTES = {
    "password": r"password|passcode|pin|密码",
    "wifi": r"wi-?fi|wlan|无线网",
    "phone": r"phone number|phone|mobile|cell|telephone|手机号码|手机号|电话号码|电话|手机",
    "email": r"e-?mail address|e-?mail|邮箱地址|邮箱|电子邮件",
    "address": r"address|住址|地址",
    "birthday": r"birthday|date of birth|birth date|生日|出生日期",
    "name": r"name|nickname|名字|姓名|英文名|中文名|昵称|网名",
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


def _alternatives(spec: str) -> str:
    return "|".join(name if _CJK.search(name) else rf"\b{name}\b" for name in spec.split("|"))


_ATTRIBUTE_RE = re.compile("|".join(f"(?P<a{i}>{_alternatives(p)})" for i, p in enumerate(_ATTRIBUTES.values())), re.I)


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
    dates: frozenset[str] = frozenset()
    topics: frozenset[str] = frozenset()  # one-at-a-time topics it is about (lexicon.topics_in)
    strong_change: bool = False  # announced outright ("switched", "现在", "已经"): enough to retire a topic

    @property
    def slot(self) -> str | None:
        return f"{self.subject}|{self.attribute}" if self.attribute else None


def strip_filler(text: str) -> str:
    """'Oh and I really like americano coffee lol' -> 'I really like americano coffee'."""
    original = unicodedata.normalize("NFKC", text).strip()
    stripped = _TRAIL_FILLER.sub("", _LEAD_FILLER.sub("", original)).strip(" ,，.。!！~～")
    return stripped or original


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


def _language(text: str) -> str:
    return "zh" if len(_CJK.findall(text)) >= len(re.findall(r"[A-Za-z]+", text)) else "en"


def _people(text: str) -> list[str]:
    return sorted({m.concept for m in people_in(text)})


_NOT_NAMES = frozenset(
    """now today yesterday tonight tomorrow recently lately currently actually also then these those well so and
    but oh hey hi yes no ok okay sure still always usually sometimes every last next this since after before when
    while because although though if once on in at for from with as lol please thanks monday tuesday wednesday
    thursday friday saturday sunday january february march april may june july august september october november
    december weekends weekdays mornings evenings nights""".split()
)
# The hundred commonest Chinese surnames: a two- or three-character subject starting with one is a name.
_SURNAMES = frozenset(
    "王李张刘陈杨黄赵吴周徐孙马朱胡郭何高林罗郑梁谢宋唐许韩冯邓曹彭曾肖田董袁潘于蒋蔡余杜叶程苏魏吕丁任沈姚卢姜崔钟谭陆汪范金"
    "石廖贾夏韦付方白邹孟熊秦邱江尹薛闫段雷侯龙史陶黎贺顾毛郝龚邵万钱严覃武戴莫孔向汤"
)


def _proper_names(prefix: str) -> list[str]:
    """Names in the words before the predicate ("Alice likes cats"): capitalised, not the user."""
    words = {w.lower() for w in re.findall(r"\b[A-Z][a-z]+\b", prefix)}
    return sorted(w for w in words if w not in EN_STOPWORDS and w not in _NOT_NAMES and not _SELF_EN.fullmatch(w))


def _subject(prefix: str, language: str) -> str:
    """Who the words before the predicate name: the user, one of theirs, or someone else ("he":
    someone, never known to be the same someone)."""
    third = _THIRD_PERSON.search(prefix)
    if third is not None and not (_SELF_EN.search(prefix) or _SELF_ZH.search(prefix)):
        return "someone:" + _PRONOUN.get(third.group(0).lower(), third.group(0).lower())
    people = _people(prefix)
    # A sister or a boss the user mentions is the user's; a place only when said so ("our office",
    # "我们公司"): in "We bought a house" the house is what was bought, not who.
    if people and not set(people) <= _PERSONS:
        owned = re.search(r"\b(?:my|our|the user's|user's)\s+\w*\s*\w+|我的|我们|我家|用户的", prefix, re.I)
        people = [p for p in people if p in _PERSONS or owned]
    if people:
        names = _proper_names(prefix) if language == "en" else []
        return "/".join([*(names or ["user"]), *people])
    if language == "en":
        names = _proper_names(prefix)
        return "/".join(names) if names else "user"
    if _SELF_ZH.search(prefix):
        return "user"
    rest = re.sub(r"[^\u3400-\u9fff]", "", prefix)
    is_name = 2 <= len(rest) <= 3 and rest[0] in _SURNAMES  # "张三喜欢猫"; "已经", "每天晚上" are not names
    return rest if is_name else "user"


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


# People whose identity a "my X is Y" statement names ("My manager is Linda"); not places.
_PERSONS = frozenset(
    "sister brother mother father wife husband partner son daughter grandmother grandfather aunt uncle cousin "
    "friend roommate colleague boss subordinate teacher classmate neighbour doctor client".split()
)
_NAME_VALUE = re.compile(
    r"^\s*(?:[A-Z][\w'-]+(?:\s+[A-Z][\w'-]+)*|[\u3400-\u9fff]{1,2}(?:总|老师|医生|经理)|小[\u3400-\u9fff])\s*$"
)


def _copula_attribute(np: str, value: str) -> str | None:
    """The attribute a "X is Y" statement sets: its attribute nouns ("password", "手机号") with the
    other words of an English X ("netflix password"), or "who" when X is a person and Y a name."""
    names = list(_ATTRIBUTES)
    found = {names[int(next(k for k, v in m.groupdict().items() if v)[1:])] for m in _ATTRIBUTE_RE.finditer(np)}
    if not found:
        persons = {m.concept for m in people_in(np)} & _PERSONS
        return "who" if persons and (_NAME_VALUE.match(value) or _SURNAME_NAME.match(value)) else None
    if not _CJK.search(np):
        rest = _ATTRIBUTE_RE.sub(" ", np)
        for m in sorted(people_in(rest), key=lambda m: -m.start):
            rest = rest[: m.start] + " " + rest[m.end :]
        found |= {t for t in query_tokens(_SELF_EN.sub(" ", rest)) if t not in _LIGHT_EN and not t.isdigit()}
    return " ".join(sorted(found))


def _clauses(text: str) -> list[str]:
    """A statement's clauses, for the one that names a slot: "Linda left; my new manager is Raj"."""
    return [c for c in _CLAUSE_SPLIT.split(text) if c.strip()] or [text]


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


@lru_cache(maxsize=8192)
def read_claim(text: str) -> Claim:
    """The claim of one statement (see the module's docstring); pure, so each text is read once."""
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
        dates=dates_of(text),
        topics=topics_in(lowered),
        strong_change=change_cue is not None and not future and bool(_STRONG_CHANGE.search(lowered)),
    )
    for clause in reversed(_clauses(text)):  # the last clause that names a slot says what is true now
        found = _read_clause(clause, language, base)
        if found is not None:
            if found.attribute == "name" and found.subject != "user":  # "my wife's name is X", "我老婆叫X"
                found = replace(found, attribute="who")
            return found
    if change_cue is not None and (old or new):  # "I switched from coffee to tea"
        last = _clauses(text)[-1]  # "Our office moved close to home, so I walk to work now": the user
        cue = _CHANGE.search(last.lower() if language == "en" else last)
        said = last[: cue.start()] if cue is not None else text[: change_cue.start()]
        return replace(base, subject=_subject(said, language), attribute=_domain("", lowered, old | new), values=new)
    return base


def _read_clause(clause: str, language: str, base: Claim) -> Claim | None:
    lowered = clause.lower() if language == "en" else clause
    for predicate in _PREDICATES:
        match = predicate.pattern.search(lowered)
        if match is None:
            continue
        # Who it is about: the words before the predicate, or before the old value of a change
        # ("我最近从咖啡换成了茶": not "从咖啡").
        cut_at = min([match.start(), *(m.start() for m in [_CHANGE_OLD.search(lowered)] if m)])
        value_text = lowered[match.end() :]
        values = _value(value_text)
        attribute = predicate.attribute or _domain(value_text, lowered, values)
        if predicate.attribute == "favourite":  # one favourite of a kind, apart from what else is liked
            attribute = f"favourite {_domain(value_text, lowered, values) or _copula_attribute(lowered, '')}"
        return replace(
            base,
            subject=_subject(clause[:cut_at], language),
            attribute=attribute,
            single=predicate.single,
            negated=base.negated or predicate.negative,
            values=values,
        )
    set_to = _SET_TO.search(lowered)  # "I changed my Netflix password to thunderbolt", "把密码改成了X"
    if set_to is not None:
        np, value_text = set_to.group("np") or set_to.group("np_zh"), set_to.group("value") or set_to.group("value_zh")
        attribute = _copula_attribute(np, value_text)
        if attribute is not None:
            values = _value(value_text) | numbers_of(value_text)
            subject = _subject(clause[: set_to.start()] + " " + np, language)
            return replace(base, subject=subject, attribute=attribute, single=True, values=values, change=True)
    copula = _COPULA.match(lowered.strip())
    if copula is not None:
        np = copula.group("np") or copula.group("np_zh") or ""
        value_text = copula.group("value") or copula.group("value_zh") or ""
        original_value = clause.strip()[len(clause.strip()) - len(value_text) :]
        attribute = _copula_attribute(np, original_value)
        if attribute is not None:
            values = _value(value_text) | numbers_of(value_text)
            return replace(base, subject=_subject(np, language), attribute=attribute, single=True, values=values)
    return None


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
