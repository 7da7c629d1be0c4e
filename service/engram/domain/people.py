"""Words for people, Chinese and English, as domain/subjects.py reads them (data only): who is
the speaker, one of the speaker's people, someone else, or nobody; which relations one has one of;
which Chinese kin words name one person each."""

from __future__ import annotations

import re

USER = "user"
SOMEONE = "someone"
WE = "we"

# One at a time: "my mother" said twice is one person; "my sister" said twice may be two.
ONLY_ONE = frozenset(
    {
        "mother",
        "father",
        "parents",
        "wife",
        "husband",
        "partner",
        "boss",
        "company",
        "office",
        "home",
        "school",
        "team",
        "department",
    }
)
# Chinese kin words that name one person each, where English has one word for several: 叔叔 and
# 舅舅 are both "uncle", and two uncles. Words of one group name the same person.
ZH_REFERENT_GROUPS = (
    "老婆 妻子 太太 媳妇 爱人 老伴",
    "老公 丈夫",
    "妈妈 母亲 老妈 妈 娘",
    "爸爸 父亲 老爸 爸",
    "姐姐 姐",
    "妹妹 妹",
    "哥哥 哥",
    "弟弟 弟",
    "叔叔 叔",
    "伯伯 伯父 伯",
    "舅舅 舅",
    "姑父",
    "姨父",
    "姑姑 姑妈 姑",
    "阿姨 姨妈 姨",
    "舅妈",
    "婶婶 婶",
    "奶奶",
    "爷爷",
    "外婆 姥姥",
    "外公 姥爷",
    "表哥",
    "表姐",
    "表妹",
    "表弟",
    "堂哥",
    "堂姐",
    "堂妹",
    "堂弟",
)
ZH_REFERENT = {word: group.split()[0] for group in ZH_REFERENT_GROUPS for word in group.split()}
# One-character kin words, people only right after an owner ("我姐", "我妈"): alone they are parts of
# other words (小姐, 哥们).
ZH_SHORT_KIN = {
    "姐": "sister",
    "妹": "sister",
    "哥": "brother",
    "弟": "brother",
    "妈": "mother",
    "爸": "father",
    "叔": "uncle",
    "伯": "uncle",
    "舅": "uncle",
    "姑": "aunt",
    "姨": "aunt",
    "婶": "aunt",
    "娘": "mother",
}

FIRST_PERSON_EN = frozenset({"i", "i'm", "i've", "i'd", "i'll", "me", "myself", "im", "ive"})
OWNER_EN = {"my": USER, "mine": USER, "our": WE, "ours": WE}
THIRD_EN = frozenset({"he", "she", "they", "him", "her", "his", "their", "them", "he's", "she's", "they're"})
WE_EN = frozenset({"we", "us", "we're", "we've", "we'd", "we'll"})
EN_TOKEN = re.compile(r"[A-Za-z][A-Za-z'’\-]*|\d+")
# Before a relation, words that qualify it ("my older sister", "my best friend", "my new boss").
QUALIFIERS = frozenset(
    {
        "older",
        "elder",
        "younger",
        "little",
        "big",
        "baby",
        "best",
        "new",
        "old",
        "former",
        "ex",
        "late",
        "twin",
        "eldest",
        "youngest",
        "oldest",
        "step",
        "dear",
        "closest",
        "favorite",
        "favourite",
        "other",
        "second",
        "first",
    }
)
# Qualifiers that tell two people of one relation apart.
RANKS = {
    "older": "older",
    "elder": "older",
    "big": "older",
    "eldest": "older",
    "oldest": "older",
    "younger": "younger",
    "little": "younger",
    "baby": "younger",
    "youngest": "younger",
}
ZH_FIRST_PERSON = frozenset({"我", "本人", "用户", "俺"})
ZH_WE = frozenset({"我们", "咱们", "咱", "我俩", "我们俩"})
ZH_THIRD = frozenset({"他", "她", "他们", "她们", "人家"})
ZH_NAME = re.compile(
    r"^(?:小|老|阿)[\u3400-\u9fff]$|^([\u3400-\u9fff])\1$|^[\u3400-\u9fff]{1,2}(?:总|老师|医生|经理|姐|哥|叔|姨)$"
)
ZH_STOP_FLAGS = ("v", "p")  # a verb, a preposition: the subject is behind
# "公司把我调到成都": the user is what the sentence is about, whoever does it.
ZH_USER_AS_OBJECT = re.compile("(?:把|让|给|叫|派|调|送)我(?!们)")
# Nouns of attributes jieba may take for names ("英文名", "网名").
ZH_NOT_NAMES = frozenset("英文名 中文名 名字 姓名 网名 昵称 小名 大名 邮箱 手机号 电话 微信号 地址 生日".split())


NOT_NAMES = frozenset(
    """now today yesterday tonight tomorrow recently lately currently actually also then these those well so and
    but oh hey hi yes no ok okay sure still always usually sometimes every last next this since after before when
    while because although though if once on in at for from with as lol please thanks monday tuesday wednesday
    thursday friday saturday sunday january february march april may june july august september october november
    december weekends weekdays mornings evenings nights the a an my our your finally just ugh omg wow big new
    one two three four five six seven eight nine ten eleven twelve twenty thirty forty fifty hundred
    it it's its that that's this there there's here here's what what's who who's let's
    he she they him her his their them he's she's they're we us you your you're i""".split()
)


PREPOSITIONS = frozenset("at in on for to with from of by about into onto since until after before near".split())


PLACES = frozenset({"home", "office", "company", "school", "team", "department"})
