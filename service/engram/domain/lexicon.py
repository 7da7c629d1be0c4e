"""A small bilingual lexicon of everyday personal facts, for the rule path (no LLM).

Concepts: the things people say they like, eat, drink, keep or do, each with its Chinese and
English names and its parent ("americano" is a kind of "coffee", itself a "beverage"), so that
"I like Americano" and "我喜欢喝美式" name the same thing, and "I switched from coffee to tea"
reaches a memory that only says "Americano". Kinship and roles: who a fact is about ("my sister",
"我妹妹"). Anything outside the lexicon still works by its words; the lexicon only lets the
rules see through wording and language where it knows the words. Measured by
`engram eval --lifecycle` (docs/lifecycle.md).
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from functools import lru_cache
from importlib import resources

# concept: (parent, names). Names are matched as whole words (English, any plural "s"/"es") or as
# substrings (Chinese). The domains (parent None) are what a slot is about.
_CONCEPTS: dict[str, tuple[str | None, str]] = {
    # domains
    "beverage": (None, "drink|drinks|beverage|beverages|饮料|喝的"),
    "food": (None, "food|dish|dishes|meal|cuisine|食物|吃的"),
    "pet": (None, "pet|pets|宠物"),
    "sport": (None, "sport|sports|exercise|workout|运动|锻炼"),
    "music": (None, "music|音乐"),
    "colour": (None, "colour|color|颜色"),
    "transport": (None, "commute|transport|交通|通勤"),
    "courier": (None, "courier|delivery|快递"),
    "place": (None, "place|地方"),
    # beverages
    "coffee": ("beverage", "coffee|咖啡"),
    "americano": ("coffee", "americano|americano coffee|美式|美式咖啡"),
    "latte": ("coffee", "latte|拿铁"),
    "espresso": ("coffee", "espresso|浓缩|意式浓缩"),
    "cappuccino": ("coffee", "cappuccino|卡布奇诺"),
    "mocha": ("coffee", "mocha|摩卡"),
    "flat white": ("coffee", "flat white|澳白|馥芮白"),
    "cold brew": ("coffee", "cold brew|冷萃"),
    "tea": ("beverage", "tea|茶|茶水"),
    "green tea": ("tea", "green tea|绿茶|龙井|碧螺春"),
    "black tea": ("tea", "black tea|红茶"),
    "oolong": ("tea", "oolong|乌龙|乌龙茶|铁观音"),
    "matcha": ("tea", "matcha|抹茶"),
    "milk tea": ("tea", "milk tea|bubble tea|boba|奶茶|珍珠奶茶"),
    "pu'er": ("tea", "pu'er|puer|普洱"),
    "milk": ("beverage", "milk|牛奶"),
    "soy milk": ("beverage", "soy milk|soymilk|豆浆"),
    "juice": ("beverage", "juice|果汁"),
    "orange juice": ("juice", "orange juice|橙汁"),
    "water": ("beverage", "water|白开水|矿泉水"),
    "sparkling water": ("water", "sparkling water|苏打水|气泡水"),
    "soda": ("beverage", "soda|soft drink|coke|cola|pepsi|sprite|可乐|汽水|雪碧"),
    "alcohol": ("beverage", "alcohol|liquor|booze|drinking alcohol|酒|喝酒|酒精|酒类|滴酒"),
    "beer": ("alcohol", "beer|啤酒"),
    "wine": ("alcohol", "wine|葡萄酒"),
    "red wine": ("wine", "red wine|红酒|红葡萄酒"),
    "white wine": ("wine", "white wine|白葡萄酒"),
    "baijiu": ("alcohol", "baijiu|白酒"),
    "whisky": ("alcohol", "whisky|whiskey|威士忌"),
    "sake": ("alcohol", "sake|清酒"),
    "hot chocolate": ("beverage", "hot chocolate|cocoa|热巧克力|可可"),
    # food
    "meat": ("food", "meat|肉|肉类"),
    "beef": ("meat", "beef|牛肉"),
    "steak": ("beef", "steak|牛排"),
    "pork": ("meat", "pork|猪肉"),
    "chicken": ("meat", "chicken|鸡肉|炸鸡"),
    "lamb": ("meat", "lamb|mutton|羊肉"),
    "seafood": ("food", "seafood|海鲜"),
    "fish": ("seafood", "fish|鱼|鱼肉"),
    "shrimp": ("seafood", "shrimp|prawn|prawns|虾"),
    "crab": ("seafood", "crab|螃蟹|蟹"),
    "vegetables": ("food", "vegetable|veggies|蔬菜|青菜"),
    "fruit": ("food", "fruit|水果"),
    "rice": ("food", "rice|米饭|大米"),
    "noodles": ("food", "noodle|noodles|面条|拉面|米线"),
    "dumplings": ("food", "dumpling|饺子"),
    "pizza": ("food", "pizza|披萨|比萨"),
    "pasta": ("food", "pasta|spaghetti|意面|意大利面"),
    "sushi": ("food", "sushi|寿司"),
    "hotpot": ("food", "hotpot|hot pot|火锅"),
    "burger": ("food", "burger|hamburger|汉堡"),
    "spicy food": ("food", "spicy food|spicy|辣|辣的|辣椒"),
    "sweets": ("food", "sweets|dessert|desserts|candy|甜食|甜点|糖果"),
    "chocolate": ("sweets", "chocolate|巧克力"),
    "ice cream": ("sweets", "ice cream|冰淇淋|雪糕"),
    "cake": ("sweets", "cake|蛋糕"),
    "peanuts": ("food", "peanut|花生"),
    "eggs": ("food", "egg|鸡蛋"),
    "dairy": ("food", "dairy|乳制品|奶制品"),
    "gluten": ("food", "gluten|麸质"),
    "cilantro": ("food", "cilantro|coriander|香菜"),
    # pets
    "cat": ("pet", "cat|kitten|猫|猫咪|小猫"),
    "dog": ("pet", "dog|puppy|狗|小狗|狗狗"),
    "corgi": ("dog", "corgi|柯基"),
    "golden retriever": ("dog", "golden retriever|金毛"),
    "husky": ("dog", "husky|哈士奇"),
    "poodle": ("dog", "poodle|泰迪|贵宾犬"),
    "rabbit": ("pet", "rabbit|bunny|兔子|兔"),
    "hamster": ("pet", "hamster|仓鼠"),
    "parrot": ("pet", "parrot|鹦鹉"),
    "goldfish": ("pet", "goldfish|金鱼"),
    "turtle": ("pet", "turtle|tortoise|乌龟"),
    # sport
    "running": ("sport", "running|jogging|跑步|慢跑"),
    "swimming": ("sport", "swimming|swim|游泳"),
    "basketball": ("sport", "basketball|篮球"),
    "football": ("sport", "football|soccer|足球"),
    "tennis": ("sport", "tennis|网球"),
    "badminton": ("sport", "badminton|羽毛球"),
    "table tennis": ("sport", "table tennis|ping pong|ping-pong|乒乓球"),
    "yoga": ("sport", "yoga|瑜伽"),
    "hiking": ("sport", "hiking|hike|爬山|徒步"),
    "cycling": ("sport", "cycling|骑行"),
    "climbing": ("sport", "climbing|rock climbing|bouldering|攀岩"),
    "skiing": ("sport", "skiing|ski|滑雪"),
    "golf": ("sport", "golf|高尔夫"),
    "gym": ("sport", "gym|weightlifting|健身"),
    # music
    "jazz": ("music", "jazz|爵士|爵士乐"),
    "rock": ("music", "rock|rock music|摇滚|摇滚乐"),
    "classical music": ("music", "classical music|classical|古典音乐|古典乐"),
    "pop": ("music", "pop music|流行音乐|流行歌"),
    "hip hop": ("music", "hip hop|hip-hop|rap|说唱|嘻哈"),
    # colours
    "red": ("colour", "red|红色"),
    "blue": ("colour", "blue|蓝色"),
    "green": ("colour", "green|绿色"),
    "yellow": ("colour", "yellow|黄色"),
    "black": ("colour", "black|黑色"),
    "white": ("colour", "white|白色"),
    "purple": ("colour", "purple|紫色"),
    "pink": ("colour", "pink|粉色|粉红色"),
    # places whose names hold a drink's: "酒店" is a hotel, not alcohol
    "hotel": ("place", "hotel|酒店|宾馆"),
    "bar": ("place", "bar|pub|酒吧"),
    # transport
    "car": ("transport", "car|driving|drive|开车|自驾"),
    "subway": ("transport", "subway|metro|underground|地铁"),
    "bus": ("transport", "bus|公交|公交车|巴士"),
    "bicycle": ("transport", "bicycle|bike|自行车|单车"),
    "walking": ("transport", "walking|步行|走路"),
    "taxi": ("transport", "taxi|cab|uber|didi|打车|出租车|滴滴"),
    # couriers
    "sf express": ("courier", "sf express|顺丰"),
    "jd logistics": ("courier", "jd logistics|京东物流|京东快递"),
    "ems": ("courier", "ems|邮政"),
    "zto": ("courier", "zto|中通"),
    "yto": ("courier", "yto|圆通"),
}

# Who a fact is about: kin and roles, Chinese and English, to one key each.
_PEOPLE: dict[str, str] = {
    "sister": "sister|sisters|姐姐|妹妹|姐妹|姊妹",
    "brother": "brother|brothers|哥哥|弟弟|兄弟",
    "mother": "mother|mom|mum|mommy|mama|妈妈|母亲|老妈",
    "father": "father|dad|daddy|papa|爸爸|父亲|老爸",
    "parents": "parents|父母|爸妈",
    "father-in-law": "father-in-law|岳父|公公|老丈人",
    "mother-in-law": "mother-in-law|岳母|婆婆|丈母娘",
    "parents-in-law": "in-laws|parents-in-law|岳父母|公婆",
    "brother-in-law": "brother-in-law|姐夫|妹夫|小舅子|大舅子|小叔子",
    "sister-in-law": "sister-in-law|嫂子|弟媳|小姨子|大姨子|小姑子",
    "wife": "wife|妻子|老婆|太太|媳妇|爱人",
    "husband": "husband|丈夫|老公",
    "partner": "partner|girlfriend|boyfriend|fiancé|fiancee|fiance|女朋友|男朋友|女友|男友|对象|未婚妻|未婚夫",
    "son": "son|sons|儿子",
    "daughter": "daughter|daughters|女儿|闺女",
    "child": "child|children|kid|kids|baby|孩子|小孩|宝宝",
    "grandmother": "grandmother|grandma|granny|奶奶|外婆|姥姥",
    "grandfather": "grandfather|grandpa|爷爷|外公|姥爷",
    "aunt": "aunt|阿姨|姑姑|姨妈|舅妈|婶婶",
    "uncle": "uncle|叔叔|舅舅|伯伯|姑父|姨父",
    "cousin": "cousin|表哥|表姐|表妹|表弟|堂哥|堂姐|堂妹|堂弟",
    "friend": "friend|friends|buddy|朋友|好友|闺蜜|哥们",
    "roommate": "roommate|flatmate|室友|舍友",
    "colleague": "colleague|coworker|co-worker|同事",
    "boss": "boss|manager|supervisor|上司|老板|领导|经理|主管",
    "subordinate": "subordinate|direct report|下属|手下",
    "teacher": "teacher|professor|老师|教授",
    "classmate": "classmate|同学",
    "neighbour": "neighbour|neighbor|邻居",
    "doctor": "doctor|医生|大夫",
    "client": "client|customer|客户",
    "team": "team|团队|小组",
    "company": "company|firm|employer|公司|单位",
    "department": "department|部门",
    "office": "office|办公室",
    "home": "home|house|家里",
    "school": "school|学校",
}

# Topics of a person's life (engram/data/topics.json): the words that say a statement is about one
# ("states": "live in", "my flat", "住在", "合租") and those that tell of it changing on their own
# ("changes": "unpacking", "signed a lease", "搬家", "退租"), English matched as whole words,
# Chinese as substrings. Most are had one at a time (a home, a job, a diet): a statement that
# announces a change of one replaces the same person's older statements of it, whatever their words
# ("I use Windows" -> "I've moved entirely to a Mac"). Hobbies, pets, conditions and routines are
# had several at a time: a change there may replace one, never surely.


@dataclass(frozen=True)
class _Topics:
    states: dict[str, str]  # topic -> names, "|"-joined
    changes: dict[str, str]
    many_at_a_time: frozenset[str]


@lru_cache(maxsize=1)
def _topics() -> _Topics:
    data = json.loads(resources.files("engram.data").joinpath("topics.json").read_text(encoding="utf-8"))
    return _Topics(
        states={t: "|".join(v["states"]) for t, v in data.items()},
        changes={t: "|".join(v["changes"]) for t, v in data.items()},
        many_at_a_time=frozenset(t for t, v in data.items() if not v["one_at_a_time"]),
    )


def one_at_a_time(topic: str) -> bool:
    """A topic a person has one of at a time (a home, a job), not several (hobbies, pets)."""
    return topic not in _topics().many_at_a_time


_CJK = re.compile(r"[\u3400-\u9fff]")
_CJK_RUN = re.compile(r"[\u3400-\u9fff]+")


@dataclass(frozen=True)
class Mention:
    """A concept found in a text: where, and what it is."""

    concept: str
    start: int
    end: int


def _names(spec: str) -> list[str]:
    return [n for n in spec.split("|") if n]


_LATIN_WORD = re.compile(r"[a-z0-9]+(?:['-][a-z0-9]+)*")


@dataclass(frozen=True)
class _Index:
    """Names to what they name, scanned by dictionary lookups (a regex alternation of hundreds of
    names is slow): Latin names as runs of whole words, plural "s"/"es" allowed on the last one,
    Chinese names as substrings, longest first."""

    by_name: dict[str, str]
    words_from: dict[str, int]  # first word of a Latin name -> the most words a name starting so has
    cjk_chars: int

    @classmethod
    def of(cls, by_name: dict[str, str]) -> _Index:
        words_from: dict[str, int] = {}
        for name in (n for n in by_name if not _CJK.search(n)):
            first, count = name.split()[0], len(name.split())
            words_from[first] = max(words_from.get(first, 1), count)
        cjk = [len(n) for n in by_name if _CJK.search(n)]
        return cls(by_name, words_from, max(cjk, default=1))

    def lookup(self, found: str) -> str | None:
        """The name ``found`` is, its first and last words in any of their forms ("works nights")."""
        words = found.split(" ")
        firsts = self._stems(words[0]) if len(words) > 1 else ("",)
        for last in self._stems(words[-1]):
            for first in firsts:
                candidate = " ".join([first, *words[1:-1], last]) if len(words) > 1 else last
                if candidate in self.by_name:
                    return self.by_name[candidate]
        return None

    def mentions(self, text: str) -> tuple[Mention, ...]:
        lowered = text.lower()
        out = self._latin(lowered) + self._cjk(lowered)
        return tuple(sorted(out, key=lambda m: m.start))

    def _latin(self, text: str) -> list[Mention]:
        words = list(_LATIN_WORD.finditer(text))
        out, i = [], 0
        while i < len(words):
            word = words[i].group(0)
            starts = [self.words_from[w] for w in self._stems(word) if w in self.words_from]
            if not starts:  # most words begin no name: one set lookup each
                i += 1
                continue
            for n in range(min(max(starts), len(words) - i), 0, -1):
                span = words[i : i + n]
                found = self.lookup(" ".join(w.group(0) for w in span))
                if found is not None:
                    out.append(Mention(found, span[0].start(), span[-1].end()))
                    i += n
                    break
            else:
                i += 1
        return out

    @staticmethod
    def _stems(word: str) -> tuple[str, ...]:
        """The word and its singulars: "cats", "boxes", "puppies" (puppy)."""
        ies = word[:-3] + "y" if word.endswith("ies") else word
        return (word, word.removesuffix("es"), word.removesuffix("s"), ies)

    def _cjk(self, text: str) -> list[Mention]:
        out = []
        for run in _CJK_RUN.finditer(text):
            p, chars = run.start(), run.group(0)
            i = 0
            while i < len(chars):
                for n in range(min(self.cjk_chars, len(chars) - i), 0, -1):
                    found = self.by_name.get(chars[i : i + n])
                    if found is not None:
                        out.append(Mention(found, p + i, p + i + n))
                        i += n
                        break
                else:
                    i += 1
        return out


@lru_cache(maxsize=1)
def _concept_index() -> _Index:
    by_name: dict[str, str] = {}
    for concept, (_, spec) in _CONCEPTS.items():
        for name in _names(spec):
            by_name.setdefault(name.lower(), concept)
    return _Index.of(by_name)


@lru_cache(maxsize=1)
def _people_index() -> _Index:
    return _Index.of({name.lower(): key for key, spec in _PEOPLE.items() for name in _names(spec)})


@lru_cache(maxsize=16384)
def concepts_in(text: str) -> tuple[Mention, ...]:
    """Every concept named in the text, longest names first, left to right."""
    return _concept_index().mentions(text)


@lru_cache(maxsize=16384)
def people_in(text: str) -> tuple[Mention, ...]:
    """Every person or place of the user's named in the text ("my sister", "我们公司")."""
    return _people_index().mentions(text)


def lineage(concept: str) -> list[str]:
    """The concept and its parents, nearest first: americano -> coffee -> beverage."""
    out = []
    current: str | None = concept
    while current is not None and current not in out:
        out.append(current)
        current = _CONCEPTS[current][0] if current in _CONCEPTS else None
    return out


def domain_of(concept: str) -> str:
    return lineage(concept)[-1]


def is_domain(concept: str) -> bool:
    return concept in _CONCEPTS and _CONCEPTS[concept][0] is None


def within(concept: str, family: str) -> bool:
    """Whether ``concept`` is ``family`` or a kind of it (americano within coffee)."""
    return family in lineage(concept)


def _topics_by_name(topics: dict[str, str]) -> dict[str, str]:
    """Each name to the topics it names, joined by "+" (a roommate is of a home, and so on)."""
    by_name: dict[str, list[str]] = {}
    for topic, spec in topics.items():
        for name in _names(spec):
            by_name.setdefault(name.lower(), []).append(topic)
    return {name: "+".join(found) for name, found in by_name.items()}


@lru_cache(maxsize=1)
def _topic_index() -> _Index:
    return _Index.of(_topics_by_name(_topics().states))


@lru_cache(maxsize=16384)
def topics_in(text: str) -> frozenset[str]:
    """The topics a text is about (its home, its diet, its pets...: see one_at_a_time), by what
    states them or tells of them changing."""
    stated = {t for m in _topic_index().mentions(text) for t in m.concept.split("+")}
    named = concepts_in(text)
    if any(within(m.concept, "alcohol") for m in named):  # wine, beer, 白酒: what one drinks
        stated.add("drinking")
    if any(within(m.concept, "pet") for m in named):  # rabbits, 柯基: the pets one has
        stated.add("pet_status")
    return frozenset(stated) | topic_changes_in(text)


@lru_cache(maxsize=1)
def _topic_change_index() -> _Index:
    return _Index.of(_topics_by_name(_topics().changes))


@lru_cache(maxsize=16384)
def topic_changes_in(text: str) -> frozenset[str]:
    """The topics the text tells of changing ("unpacking in Denver": residence; "离职了": job)."""
    return frozenset(t for m in _topic_change_index().mentions(text) for t in m.concept.split("+"))
