"""One perspective for the whole store: a fact says "the user", never "I" (pure, never raises).

A memory is read out of its conversation, by an agent or a person browsing, where "I" means
nobody in particular; agents are asked to write "The user prefers tea", and what the user said
is stored the same way:

    "I love coffee"               -> "The user loves coffee"
    "I'm allergic to my cat"      -> "The user is allergic to the user's cat"
    "I don't eat meat"            -> "The user doesn't eat meat"
    "我很喜欢我的猫"                 -> "用户很喜欢用户的猫"

Only the first person changes, and the verb that agrees with it ("love" -> "loves", "am" -> "is",
"have" -> "has", "don't" -> "doesn't"): every other word stays as said. "We", "our" and "我们" are
the user with others and stay; so do words inside quotation marks (someone else's words), and a
line of a conversation that names its speaker ("Caroline: I went...").
"""

from __future__ import annotations

import re
from functools import lru_cache

from engram.domain.utterance import speaker_label

# Someone else's words: in double quotes, or single ones that open after a space (not the apostrophe
# of "don't" or "my parents' house").
_QUOTED = re.compile(r"\"[^\"]*\"|“[^”]*”|(?<![\w'])'[^'\n]+'(?![\w'])|‘[^’]*’|「[^」]*」|『[^』]*』")
_WORD = re.compile(r"[A-Za-z]+(?:['’][A-Za-z]+)?")
# What "I" turns into, with the verb form that agrees with "the user" (contractions included).
_FIXED = {
    "i'm": "the user is",
    "i am": "the user is",
    "i've": "the user has",
    "i have": "the user has",
    "i'll": "the user will",
    "i was": "the user was",
    "i do": "the user does",
    "i don't": "the user doesn't",
    "i dont": "the user doesn't",
    "i haven't": "the user hasn't",
    "i havent": "the user hasn't",
}
_OBJECT = {"me": "the user", "my": "the user's", "mine": "the user's", "myself": "themself"}
# Words that may stand between "I" and its verb ("I really love", "I usually go").
_ADVERBS = frozenset(
    "really also usually always never often still just sometimes mostly actually totally rarely seldom generally "
    "definitely absolutely truly honestly kinda sorta even only already mainly typically normally currently "
    "personally genuinely barely hardly".split()
)
_MODALS = frozenset("can could would should may might must shall will won't can't cannot couldn't wouldn't".split())
_PARTICIPLE_AFTER_D = frozenset("been better gone done had seen got never already just".split())
# 我 the user, not a part of another word: 自我 (self), 我国 (our country), 忘我, 无我.
_ZH_SELF = re.compile("(?<![自忘无唯])我(?![们俩国])")
# "我妈" -> "用户的妈": one of the user's people, or the user's home town.
_ZH_OWNED = re.compile(
    "(?<![自忘无唯])我(?=[妈爸姐妹哥弟叔舅姨姑婶奶爷儿女孙岳]|老婆|老公|老板|老师|老家|外婆|外公|朋友|同事|室友)"
)


def in_third_person(text: str) -> str:
    """The fact with its first person written as "the user" (see the module's docstring)."""
    if speaker_label(text) is not None:
        return text
    pieces, last = [], 0
    for quoted in _QUOTED.finditer(text):
        pieces += [_rewrite(text[last : quoted.start()], at_start=last == 0), quoted.group(0)]
        last = quoted.end()
    pieces.append(_rewrite(text[last:], at_start=last == 0))
    return "".join(pieces)


def _rewrite(text: str, at_start: bool) -> str:
    if not text:
        return text
    if "我" in text:
        text = _ZH_SELF.sub("用户", _ZH_OWNED.sub("用户的", re.sub("(?<![自忘无唯])我的", "用户的", text)))
    if not re.search(r"\b(?:i|i'm|i’m|i've|i’ve|i'd|i’d|i'll|i’ll|me|my|mine|myself|im)\b", text, re.I):
        return text
    words = list(_WORD.finditer(text))
    out, position, i = [], 0, 0
    while i < len(words):
        word = words[i]
        low = word.group(0).lower().replace("’", "'")
        replacement, used = _replacement(words, i, low, text)
        if replacement is None:
            i += 1
            continue
        start, end = word.start(), words[i + used - 1].end()
        out += [text[position:start], _cased(replacement, text, start, at_start)]
        position, i = end, i + used
    out.append(text[position:])
    return "".join(out)


def _replacement(words: list[re.Match[str]], i: int, low: str, text: str) -> tuple[str | None, int]:
    """What words[i:] becomes, and how many words that takes; None if words[i] is not the first
    person."""
    following = [w.group(0).lower().replace("’", "'") for w in words[i + 1 : i + 3]]
    if low in _OBJECT:
        if low == "my" and _exclaimed(words, i, text):
            return None, 0  # "Oh my!", "my God": said, not owned
        return _OBJECT[low], 1
    if low not in ("i", "i'm", "i've", "i'd", "i'll", "im"):
        return None, 0
    if not _standalone_i(words[i], text):
        return None, 0
    if low == "im":
        low = "i'm"
    adjacent = i + 1 < len(words) and not text[words[i].end() : words[i + 1].start()].strip()
    pair = f"{low} {following[0]}" if following and adjacent else low
    if pair in _FIXED and low == "i":
        return _FIXED[pair], 2
    if low in _FIXED:
        return _FIXED[low], 1
    if low == "i'd":
        return ("the user had" if following and following[0] in _PARTICIPLE_AFTER_D else "the user would"), 1
    # "I" and the verb after it, past any adverbs: the verb agrees with "the user".
    j = i + 1
    while j < len(words) and words[j].group(0).lower() in _ADVERBS:
        j += 1
    if j >= len(words) or j - i > 3:
        return "the user", 1
    verb = words[j].group(0)
    agreeing = _third_person_verb(verb) if verb.islower() else None  # "I Okay": no verb
    if agreeing is None:
        return "the user", 1
    between = text[words[i].end() : words[j].start()]
    return f"the user{between}{_like_case(agreeing, verb)}", j - i + 1


def _standalone_i(word: re.Match[str], text: str) -> bool:
    """ "I" the pronoun, not the letter of a list, a name or a code ("Part I", "I/O", "I-95")."""
    before = text[: word.start()].rstrip()
    after = text[word.end() : word.end() + 1]
    if after in ("/", "-", "&") or text[word.start() - 1 : word.start()] in ("/", "-", "&"):
        return False
    return not before.endswith(("Part", "part", "World War", "Louis", "Henry", "Chapter"))


_EXCLAIMED = frozenset("god gosh goodness lord word".split())


def _exclaimed(words: list[re.Match[str]], i: int, text: str) -> bool:
    """ "Oh my!", "oh my,", "my God": an exclamation, no one's."""
    following = words[i + 1].group(0).lower() if i + 1 < len(words) else None
    rest = text[words[i].end() :].lstrip()
    before = words[i - 1].group(0).lower() if i > 0 else ""
    return following in _EXCLAIMED or (before == "oh" and (not rest or rest[0] in ",.!?;"))


@lru_cache(maxsize=4096)
def _third_person_verb(word: str) -> str | None:
    """ "love" -> "loves", "go" -> "goes", "have" -> "has"; None for a word that is no verb in its
    base form (a past tense, a modal, an adjective)."""
    if word in _MODALS or word in ("am", "was", "'m", "do", "did", "don't", "didn't"):
        return None
    from lemminflect import getAllLemmas, getInflection

    lemmas = getAllLemmas(word).get("VERB", ())
    if word not in lemmas:
        return None  # "went", "loved": not the base form, nothing agrees
    if word in getInflection(word, tag="VBD"):
        return None  # "I quit", "I read": perhaps the past, which agrees with anyone
    inflected = [w for w in getInflection(word, tag="VBZ") if w.isalpha() and w[:2] == word[:2]]
    return inflected[0] if inflected else None


def _like_case(word: str, model: str) -> str:
    return word.upper() if model.isupper() and len(model) > 1 else word


def _cased(replacement: str, text: str, start: int, at_start: bool) -> str:
    """ "The user" at the start of a sentence, "the user" elsewhere."""
    before = text[:start].rstrip()
    sentence_start = (at_start and not before) or before.endswith((".", "!", "?", "。", "！", "？", ":", "\n"))
    return replacement[0].upper() + replacement[1:] if sentence_start else replacement


_AS_SAID = [
    (re.compile(r"\bthe user is\b", re.I), "I am"),
    (re.compile(r"\bthe user was\b", re.I), "I was"),
    (re.compile(r"\bthe user has\b", re.I), "I have"),
    (re.compile(r"\bthe user does\b", re.I), "I do"),
    (re.compile(r"\bthe user doesn't\b", re.I), "I don't"),
    (re.compile(r"\bthe user hasn't\b", re.I), "I haven't"),
    (re.compile(r"\bthe user['’]s\b", re.I), "my"),
    (re.compile(r"\bthemself\b", re.I), "myself"),
]
_THE_USER = re.compile(r"\bthe user\b((?:\s+(?:" + "|".join(sorted(_ADVERBS)) + r"))*)(\s+[a-z]+)?", re.I)
_SUBJECT_BEFORE = re.compile(r"(?:^|[.!?;,:]|\b(?:and|but|so|because|that|when|if|since|while|then))\s*$", re.I)


def as_the_user_said_it(text: str) -> str:
    """The fact read back in the first person, for rules written for what people say ("my first
    lease", "quit my job", "I work nights", "把我调到"); never stored."""
    if "user" in text.lower() or "themself" in text.lower():
        for pattern, said in _AS_SAID:
            text = pattern.sub(said, text)
        text = _THE_USER.sub(lambda m: _as_i(m, text), text)
    return text.replace("用户的", "我的").replace("用户", "我") if "用户" in text else text


def _as_i(match: re.Match[str], text: str) -> str:
    """ "the user works" -> "I work" where it is the subject; "the user" -> "me" after a verb."""
    before = text[: match.start()]
    if not _SUBJECT_BEFORE.search(before):
        return "me" + match.group(1) + (match.group(2) or "")
    verb = match.group(2) or ""
    return "I" + match.group(1) + (" " + _base_form(verb.strip()) if verb else "")


@lru_cache(maxsize=4096)
def _base_form(word: str) -> str:
    """ "works" -> "work", "goes" -> "go"; any other word as it is."""
    from lemminflect import getAllLemmas

    lemmas = getAllLemmas(word.lower()).get("VERB", ())
    return lemmas[0] if lemmas and _third_person_verb(lemmas[0]) == word.lower() else word
