"""The words statements are read by (domain/claims.py), Chinese and English: filler, the user,
light words, negation, change, plans, predicates and attribute nouns, names. Data and patterns
only; how they are used is claims.py."""

from __future__ import annotations

import re
from dataclasses import dataclass

from engram.domain.tokenize import query_tokens

CJK = re.compile(r"[\u3400-\u9fff]")


# Said before or after the fact without adding to it: one piece of filler at a time, each a
# whole word (domain/utterance.py checks the cut falls between words: "Sophie" is no "So" + "phie",
# "酒吧" no "酒" + "吧"). Words that start a fact as often as they are filler ("right", "那个",
# "还有") count only when punctuation follows them.
_AFTER_FILLER = r"[\s,，、:：!！.。…]*"
LEAD_FILLER = re.compile(
    r"^(?:(?:oh|ah|well|so|and|also|btw|by the way|actually|anyway|um+|uh+|hmm+|ok(?:ay)?|yeah|yes|hey|"
    r"just so you know|fyi|fun fact|quick context|lol)(?=[\s,，、:：!！.。…]|$)"
    r"|right(?=[,，:：!！.。…])"
    r"|哦对|哦|噢|对了|嗯+|其实|顺便说一下|顺便说|话说"
    r"|(?:那个|还有|另外|就是|顺便)(?=[\s,，、:：!！.。…]))" + _AFTER_FILLER,
    re.IGNORECASE,
)
TRAIL_FILLER = re.compile(
    r"[\s,，]*(?:lol|lmao|haha+|hehe|:\)|xd|哈哈+|呵呵|嘿嘿|啦|呀|哦|呢|吧|啊|嘛)[\s!！.。~～]*$", re.IGNORECASE
)
# Where a sentence may be cut into two statements: before a clause that starts over with its own
# first-person subject (domain/utterance.py checks that it also stands alone).
CLAUSE_START = re.compile(
    r"[,，;；]\s*(?:and |but |also |so )?(?=(?:i|i'm|i've|i'd|i'll|my|we|we're|we've|our|the user|the user's)\b)"
    r"|\s+(?:and|but|so)\s+(?=(?:i|i'm|i've|i'd|i'll|my|we|our)\b)"
    r"|[，,；;]\s*(?:而且|并且|还有|但是|但|不过|另外)?(?=我|用户)",
    re.IGNORECASE,
)
# A clause that needs the one before it: it points back ("I drink it daily", "my wife does too",
# "我也是", "那里") ...
BACK_REFERENCE = re.compile(
    r"\b(?:it|its|it's|that|this|there|them|those|these|they|too|either|as well|same|neither)\b"
    r"|它|那里|那儿|这里|这儿|那个|这个|那些|这些|也是|一样|同样|也.{0,2}$",
    re.IGNORECASE,
)
# ... or counts what it does not name ("two cups every morning", "每天喝两杯").
MEASURE_WITHOUT_WHAT = re.compile(
    r"\b(?:\d+|a|an|one|two|three|four|five|six|seven|eight|nine|ten|a few|several|some|many)\s+"
    r"(?:cups?|glass(?:es)?|bottles?|cans?|mugs?|pints?|shots?|bowls?|plates?|slices?|pieces?|packs?|boxes|bags?|"
    r"servings?|spoonfuls?)\b(?!\s+of\b)"
    r"|[一二两三四五六七八九十几\d]+\s*(?:杯|瓶|碗|盘|罐|包|盒|片|块|份|根|支|听)(?![\u3400-\u9fff])",
    re.IGNORECASE,
)
# A clause that only sets the scene for the next ("When I was a kid, I lived in Ohio").
SUBORDINATE_START = re.compile(
    r"^(?:when|if|because|since|although|though|while|after|before|once|as|until|whenever|unless|whereas|whether)\b"
    r"|^(?:如果|因为|虽然|当|自从|等到|要是|除非|既然|尽管|只要)",
    re.IGNORECASE,
)

# The user themself.
SELF_EN = re.compile(r"\b(?:i|i'm|im|i've|i'd|i'll|me|my|mine|myself|the user|user|the user's|user's)\b", re.I)
SELF_ZH = re.compile("用户|我们|我")

# Words that strengthen, hedge or place in time without changing the fact.
LIGHT_EN = frozenset(
    query_tokens(
        "really very so much truly quite absolutely totally definitely super pretty still also too just now "
        "currently these days nowadays lately recently a lot lots kind sort of enjoy enjoys like likes love loves "
        "adore prefer prefers fan big huge drinking drink drinks eating eat eats having have has get "
        "favorite favourite thing things stuff user"
    )
)
# How often ("every morning", "每天") is part of a fact: not light.
LIGHT_ZH = re.compile(
    "现在|目前|都|也|还|很|挺|非常|特别|真的|超级|十分|比较|最近|近来|这些天|喜欢|爱|热爱|偏爱|最爱|钟爱|喝|吃|"
    "的|了|是|啊|呢|吧|哦|呀|啦|嘛|就|会|要|在|着|过|用户|我们|我"
)

NEGATION_EN = re.compile(
    r"\b(?:not|no|never|don't|dont|doesn't|doesnt|didn't|isn't|aren't|won't|can't|cannot|hate|hates|dislike|"
    r"dislikes|no longer|stopped|quit|gave up)\b",
    re.I,
)
NEGATION_ZH = re.compile("不|没|别|讨厌|戒")

CHANGE = re.compile(
    r"\b(?:switched|switch|switching|changed|change|now prefer|no longer|not anymore|any ?more|no more|instead|"
    r"moved|relocated|from now on|stop|stopped|quit|gave up|given up|gone|these days|nowadays|sold|split up|"
    r"broke up|left(?![- ](?:arm|leg|hand|handed|foot|eye|ear|knee|side|shoulder|wrist|hip|ankle|elbow|turn))|"
    r"replaced|upgraded|graduated|finished|started|began|now)\b|换成|换了|改成|改喝|改吃|改用|改去|"
    r"不再|现在改|搬到|搬去|搬家|从今天起|以后|戒了|戒掉|分手|离职|辞职|跳槽|卖了|毕业|开始|转到|现在|已经|不.{1,4}了",
    re.I,
)
# A change announced outright: enough to retire what an older statement of the same topic says.
STRONG_CHANGE = re.compile(
    r"\b(?:switched|changed|moved|relocated|no longer|not anymore|any ?more|no more|instead|now|nowadays|"
    r"these days|quit|gave up|given up|sold|stopped|replaced|upgraded)\b|换成|换了|改成|改用|改去|不再|现在|已经|"
    r"转到|戒了|戒掉|搬到|搬去|卖了",
    re.I,
)
# A change said outright, not in passing ("now", "these days", "现在", "已经" say a change may have
# happened; these say it did).
SWITCH = re.compile(
    r"\b(?:switched|switch to|changed|moved|relocated|no longer|not anymore|any ?more|no more|instead|quit|"
    r"gave up|given up|sold|stopped|replaced|upgraded|traded in|broke up|split up|divorced|graduated|dropped out|"
    r"left my|cancell?ed|cut out)\b"
    r"|换成|换了|改成|改喝|改吃|改用|改去|不再|戒了|戒掉|搬到|搬去|搬家|卖了|转到|离职|辞职|跳槽|分手|毕业|退学|不.{1,4}了",
    re.I,
)
# What ends a habit, a membership, a thing one had ("cancelled my CrossFit membership", "日语课停了").
ENDING = re.compile(
    r"\b(?:quit|quitting|stopped|stop|cancell?ed|gave up|given up|no longer|not anymore|dropped|broke up|ended|"
    r"is over|ran out|expired|took me off|came off|weaned myself off|got rid of|rehomed|sold|lost|died|passed away|"
    r"put down)\b"
    r"|停了|不再|戒了|戒掉|取消了|退了|没续|结束了|不用了|不去了|不学了|不玩了|放弃了|到期|送人|送给|卖了|丢了|被偷了|去世|走了",
    re.I,
)
# Said as unchanged ("still in Nanshan", "还在南山"): what it names is not what changed.
STILL = re.compile(r"\b(?:still|same|remain|remains|stayed|staying)\b|还在|仍然|依然|仍在|还是在|依旧", re.I)
# Units a number counts in: sharing one is not sharing the thing counted.
UNITS = frozenset(
    "kg kilo kilos lb lbs pound pounds km mile miles cm m ft foot feet inch inches year years month months week "
    "weeks day days hour hours minute minutes time times percent dollar dollars buck bucks cup cups glass "
    "岁 公斤 斤 公里 米 年 月 天 周 次 小时 分钟 元 块 杯".split()
)
# What takes one up again ("started smoking again", "got back into chess", "又开始").
RESUME = re.compile(r"\b(?:again|back into|back to|resumed|picked up .{0,20} again)\b|又开始|重新|再次|恢复", re.I)
# A statement set in the past it tells of ("before that I taught...", "以前我在...", "小时候"): what
# it says was true then, so it changes nothing of today.
PAST_FRAME = re.compile(
    r"\b(?:before that|back then|back in (?:the day|college|school|high school|my)|in college|in high school|"
    r"growing up|as a kid|when i was|previously|"
    r"formerly|years ago|at the time)\b|以前|曾经|那时候|那时|小时候|当年|上大学时|读书的时候",
    re.I,
)
# Said as one more, not instead: "also", "another", "still", "也", "还", "又".
ADDITIVE = re.compile(
    r"\b(?:also|too|another|second|as well|both|in addition|additionally|besides|plus|still|either)\b"
    r"|也|还(?!是|在)|又(?!开始)|另外|另一|第二",
    re.I,
)
# Coming to have a thing ("got a Pixel 8", "换了华为"): a change of the thing's topic the statement names.
ACQUIRE = re.compile(
    r"\b(?:got a|got an|got my|bought|picked up|upgraded to|traded in)\b|入手|买了|换了|换成|新买", re.I
)
PRONOUN = {"his": "he", "him": "he", "her": "she", "their": "they", "them": "they", "他们": "they", "她们": "they"}
THIRD_PERSON = re.compile(r"\b(?:he|she|they|his|her|their|him|them)\b|他们|她们|他|她", re.I)
# A plan, an intention or a maybe: not what is true today, so it retires nothing now. (A date alone,
# "in November 2026" as the write path writes "last month", says neither.)
FUTURE = re.compile(
    r"\b(?:will|going to|gonna|plan(?:ning)? to|intend(?:ing)? to|about to|thinking (?:of|about)|"
    r"(?:is|am|are) (?:moving|relocating|switching|changing|starting|quitting)|next (?:week|month|year)|"
    r"maybe|perhaps|might|considering|not sure|haven't decided|undecided|"
    r"sav(?:e|es|ing) (?:up |money )?(?:for|to)|wants? to|wanting to|hop(?:e|es|ing) to|would like to|"
    r"dream(?:s|ing)? of)\b"
    r"|打算|准备|计划|将要|即将|想要|要搬|下个?月|下周|明年|以后会|可能|也许|或许|考虑|还没想好|不确定|还没定"
    r"|攒钱|存钱|希望|梦想|想买|想搬|想换|想去|想学",
    re.I,
)
# Where the old value ends and the new one starts in a change ("from coffee to tea", "从咖啡换成了茶").
CHANGE_OLD = re.compile(
    r"\b(?:from|no longer|no more|stop|stopped|quit|gave up|given up|instead of|rather than|not)\b|"
    r"从|不再|不喝|不吃|不用|不去|戒了|戒掉|把(?=[^，,。]{1,12}(?:换成|改成|换为|改为))|不",
    re.I,
)
CHANGE_NEW = re.compile(r"\b(?:to|for|now|into)\b|换成|换了|改成|改喝|改吃|改用|改去|改|现在|搬到|搬去|变成|成了", re.I)


# Chinese numbers with a unit or a multiplier: "六千人", "两只猫", "三个孩子" (not "一起", "一直").
@dataclass(frozen=True)
class Predicate:
    attribute: str | None  # None: the attribute is the value's domain (beverage, pet...)
    single: bool  # one value at a time (where one lives) or many (what one likes)
    negative: bool
    pattern: re.Pattern[str]


def _en(words: str) -> re.Pattern[str]:
    return re.compile(rf"\b(?:{words})\b", re.I)


# Longer and more specific first: the first predicate found in a statement is its predicate.
PREDICATES = [
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
COPULA = re.compile(
    r"^(?P<np>.{2,80}?)\s+(?:is|are|was|=)\s+(?P<value>.+)$|^(?P<np_zh>.{2,40}?)(?:是|为|：|:)(?P<value_zh>.+)$", re.I
)
# "changed my X to Y", "把X改成Y": X is the attribute, Y its new value.
SET_TO = re.compile(
    r"\b(?:changed|switched|updated|set|reset)\s+(?P<np>.{2,60}?)\s+(?:to|into)\s+(?P<value>.+)$"
    r"|(?:把)?(?P<np_zh>[^，,。]{2,30}?)(?:改成|换成|改为|换为|更新为|设成)了?(?P<value_zh>.+)$",
    re.I,
)
CLAUSE_SPLIT = re.compile(
    r"[;；,，]\s*|(?<=[.!?。！？])\s*(?=\S)|\s+(?:and|so|but)\s+(?=(?:i|i'm|i've|my|we|our)\b)", re.I
)
SURNAME_NAME = re.compile(
    "^\\s*[王李张刘陈杨黄赵吴周徐孙马朱胡郭何高林罗郑梁谢宋唐许韩冯邓曹彭曾肖田董袁潘于蒋蔡余杜叶程苏魏吕丁任沈姚卢姜崔钟谭陆汪范金][\\u3400-\\u9fff]{1,2}\\s*$"
)
# Attribute nouns, so a copula's attribute reads the same in either language.
ATTRIBUTES = {
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
    return "|".join(name if CJK.search(name) else rf"\b{name}\b" for name in spec.split("|"))


ATTRIBUTE_RE = re.compile("|".join(f"(?P<a{i}>{_alternatives(p)})" for i, p in enumerate(ATTRIBUTES.values())), re.I)


NOT_NAMES = frozenset(
    """now today yesterday tonight tomorrow recently lately currently actually also then these those well so and
    but oh hey hi yes no ok okay sure still always usually sometimes every last next this since after before when
    while because although though if once on in at for from with as lol please thanks monday tuesday wednesday
    thursday friday saturday sunday january february march april may june july august september october november
    december weekends weekdays mornings evenings nights""".split()
)
# The hundred commonest Chinese surnames: a two- or three-character subject starting with one is a name.
SURNAMES = frozenset(
    "王李张刘陈杨黄赵吴周徐孙马朱胡郭何高林罗郑梁谢宋唐许韩冯邓曹彭曾肖田董袁潘于蒋蔡余杜叶程苏魏吕丁任沈姚卢姜崔钟谭陆汪范金"
    "石廖贾夏韦付方白邹孟熊秦邱江尹薛闫段雷侯龙史陶黎贺顾毛郝龚邵万钱严覃武戴莫孔向汤"
)


# People whose identity a "my X is Y" statement names ("My manager is Linda"); not places.
PERSONS = frozenset(
    "sister brother mother father wife husband partner son daughter grandmother grandfather aunt uncle cousin "
    "friend roommate colleague boss subordinate teacher classmate neighbour doctor client".split()
)
NAME_VALUE = re.compile(
    r"^\s*(?:[A-Z][\w'-]+(?:\s+[A-Z][\w'-]+)*|[\u3400-\u9fff]{1,2}(?:总|老师|医生|经理)|小[\u3400-\u9fff])\s*$"
)
