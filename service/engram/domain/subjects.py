"""Who a statement is about (pure): the user, one of the user's people ("my sister", "我老婆"),
someone named ("Sophie", "王芳", "小李"), someone unnamed ("she", "他") or we.

    "I live in Berlin"                 -> user
    "My older sister Mia is a nurse"   -> user/sister, named mia
    "Sophie is my daughter"            -> named sophie
    "My manager's manager is Dev"      -> user/boss/boss
    "同事小李的邮箱是..."                  -> user/colleague, named 小李
    "我叔叔今年五十岁" / "我舅舅今年五十岁" -> user/uncle (叔叔) / user/uncle (舅舅): two people
    "She moved to Rome"                -> someone

The subject is the first person the statement names before its verb; a statement that names
nobody there is the user's own ("Finally done unpacking in Denver", "离职了"): people tell an
assistant about themselves without saying "I". Whether two statements are about one person is
``same_person``: certain only for the user, a name said twice, or a relation one has one of (my
mother, my wife, my boss); perhaps for a relation one may have several of (a sister, a friend)
or a name against the same relation unnamed; never for "he" and "she", who are never known to
be the same someone twice.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from enum import StrEnum
from functools import lru_cache
from typing import Any

from engram.domain.lexicon import concepts_in, domain_of, people_in, topics_in
from engram.domain.people import (
    EN_TOKEN,
    FIRST_PERSON_EN,
    NOT_NAMES,
    ONLY_ONE,
    OWNER_EN,
    PLACES,
    PREPOSITIONS,
    QUALIFIERS,
    RANKS,
    SOMEONE,
    THIRD_EN,
    USER,
    WE,
    WE_EN,
    ZH_FIRST_PERSON,
    ZH_NAME,
    ZH_NOT_NAMES,
    ZH_REFERENT,
    ZH_SHORT_KIN,
    ZH_STOP_FLAGS,
    ZH_THIRD,
    ZH_USER_AS_OBJECT,
    ZH_WE,
)
from engram.domain.text import guess_language
from engram.domain.tokenize import segment


class Sameness(StrEnum):
    same = "same"  # certainly one person
    perhaps = "perhaps"  # one person or two: a sister, a friend, a name against "my boss"
    different = "different"


@dataclass(frozen=True)
class Subject:
    """Who: a path of relations from the user ("user", "sister") or from a name, and the name
    the person is given, if any. ``terms`` are the words each relation was said in (叔叔 and 舅舅
    are both an uncle, and two uncles)."""

    path: tuple[str, ...]
    name: str | None = None
    terms: tuple[str, ...] = ()

    @property
    def key(self) -> str:
        return "/".join(self.path) + (f":{self.name}" if self.name else "")

    @property
    def said(self) -> str:
        """The key, with the words the relations were said in when they tell two people apart
        ("user/uncle (舅舅)")."""
        return self.key + (f" ({' '.join(self.terms)})" if self.terms else "")

    @property
    def is_user(self) -> bool:
        return self.path == (USER,) and self.name is None


THE_USER = Subject((USER,))


def subject_of(clause: str, default: Subject = THE_USER) -> Subject:
    """Who the clause is about (see the module's docstring); ``default`` when it names nobody
    before its verb (the user, or for a later clause the subject of the one before)."""
    chinese = guess_language(clause) == "zh"
    return (_subject_zh(clause) if chinese else _subject_en(clause)) or default


def names_someone(clause: str) -> bool:
    """Whether the clause is about someone it names or the user's people ("Andrew lives in Ohio",
    "王芳今年三十二岁", "my sister is a nurse"), not "he" or nobody."""
    chinese = guess_language(clause) == "zh"
    found = _subject_zh(clause) if chinese else _subject_en(clause)
    return found is not None and found.path[0] not in (SOMEONE, WE) and not found.is_user


def _relation_en(word: str) -> str | None:
    people = people_in(word)
    if people and people[0].start == 0 and people[0].end == len(word):
        return people[0].concept
    concepts = [m.concept for m in concepts_in(word)]
    if concepts and domain_of(concepts[0]) == "pet":  # "my cat Jasper" is about the cat
        return concepts[0]
    return None


def _name_like(token: str, at_start: bool, following: str | None) -> bool:
    """A capitalised word that names someone: not a word of the language, or a noun said first and
    followed by what is said of it ("Jasper is 9", "Jasper's all better")."""
    if not token[:1].isupper() or token.lower() in NOT_NAMES or concepts_in(token.lower()):
        return False
    kinds = _lemma_kinds(token.lower().removesuffix("'s").removesuffix("’s"))
    if not kinds or (at_start and token.endswith(("'s", "’s"))):  # "Mike's a Leo", "Jasper's all better"
        return True
    return (
        at_start
        and kinds <= {"NOUN", "PROPN"}
        and following is not None
        and (
            following.lower() in {"is", "was", "has", "had", "and", "got", "turned", "just"}
            or token.endswith(("'s", "’s"))
        )
    )


@lru_cache(maxsize=65536)
def _lemma_kinds(word: str) -> frozenset[str]:
    from lemminflect import getAllLemmas

    return frozenset(getAllLemmas(word))


def known_word(word: str) -> bool:
    """A word of English (any form of a lemma the dictionary knows), not a name."""
    return bool(_lemma_kinds(word.lower().removesuffix("'s").removesuffix("’s")))


def is_verb(word: str) -> bool:
    return bool(_lemma_kinds(word) & {"VERB", "AUX"}) and word not in OWNER_EN


def _subject_en(clause: str) -> Subject | None:
    tokens = EN_TOKEN.findall(clause)
    owner: Subject | None = None
    i = 0
    while i < len(tokens):
        token, low = tokens[i], tokens[i].lower()
        following = tokens[i + 1] if i + 1 < len(tokens) else None
        if low == "the" and following is not None and following.lower() in ("user", "user's", "user’s"):
            if following.lower() == "user":
                return THE_USER
            owner, i = THE_USER, i + 2
            continue
        if low in FIRST_PERSON_EN:
            return THE_USER
        if low in OWNER_EN:
            owner, i = (THE_USER if OWNER_EN[low] == USER else Subject((WE,))), i + 1
            continue
        if low in WE_EN:
            return Subject((WE,))
        bare = low.removesuffix("'s").removesuffix("’s")
        relation = _relation_en(bare)
        if relation is not None:
            start = i
            while start > 0 and tokens[start - 1].lower() in QUALIFIERS:  # "my older sister"
                start -= 1
            found = _chain_en(owner or THE_USER, tokens, start)
            if _and_i(tokens, i):  # "my girlfriend and I": the two of them
                return Subject((WE,))
            return found
        if owner is None and _name_like(token, i <= 1, following):  # after "my" it is a brand: "my Netflix"
            name = token.removesuffix("'s").removesuffix("’s").lower()
            if token.endswith(("'s", "’s")):  # "Tom's wife", "Kim's number"
                return _chain_en(Subject((f"name:{name}",), None), tokens, i + 1, named=Subject((f"name:{name}",)))
            return Subject(("name",), name)
        if low in THIRD_EN:
            return Subject((SOMEONE,))
        if token.endswith(("'s", "’s")) and owner is None and bare not in OWNER_EN and not _lemma_kinds(bare):
            return Subject(("name",), bare)  # "kim's number": someone's, even in lower case
        if owner is None and i > 0 and (is_verb(low) or low in PREPOSITIONS):
            break  # past the verb or a preposition: what follows is what is said, not who
        if owner is not None and low not in QUALIFIERS and is_verb(low):
            break
        i += 1
    return owner


def _and_i(tokens: list[str], i: int) -> bool:
    """ "my girlfriend and I", "Tom and me": the relation said with the user."""
    following = [t.lower() for t in tokens[i + 1 : i + 4]]
    return len(following) >= 2 and following[0] == "and" and following[1] in ("i", "me", "i've", "i'm")


def _chain_en(owner: Subject, tokens: list[str], i: int, named: Subject | None = None) -> Subject:
    """From tokens[i] on: relations joined by "'s" ("my manager's manager"), and the name given
    right after the last ("my sister Mia", "my cat Jasper"). "older" and "younger" tell two
    sisters apart, as 姐姐 and 妹妹 do."""
    path, terms = list(owner.path), list(owner.terms)
    rank = ""
    while i < len(tokens):
        low = tokens[i].lower()
        bare = low.removesuffix("'s").removesuffix("’s")
        relation = _relation_en(bare)
        if relation is None:
            if low in QUALIFIERS and len(path) == len(owner.path):
                rank = RANKS.get(low, rank)
                i += 1
                continue
            break
        path.append(relation)
        terms.append(f"{relation}:{rank}" if rank else bare)
        rank = ""
        i += 1
        if not low.endswith(("'s", "’s")):
            break
    if len(path) == len(owner.path):
        return named or owner
    name = None
    if i < len(tokens) and tokens[i][:1].isupper() and tokens[i].lower() not in NOT_NAMES:
        name = tokens[i].removesuffix("'s").removesuffix("’s").lower()
    return Subject(tuple(path), name, tuple(terms))


@lru_cache(maxsize=16384)
def _tagged(text: str) -> tuple[tuple[str, str], ...]:
    """Chinese words with their parts of speech (jieba), cut on the words ``segment`` finds."""
    import jieba.posseg

    segment("")  # the dictionary, loaded once
    return tuple((w.word, w.flag) for w in jieba.posseg.cut(text))


def _subject_zh(clause: str) -> Subject | None:
    if ZH_USER_AS_OBJECT.search(clause):
        return THE_USER
    words = _joined_names(
        [(w, f) for w, f in _tagged(clause) if w.strip() and not re.fullmatch(r"[，,、。.！!？?：:；;~～\s]+", w)]
    )
    for index, (word, flag) in enumerate(words):
        if word in ZH_FIRST_PERSON or word in ("我的", "用户的") or word in ZH_WE:
            owner = THE_USER if word not in ZH_WE else Subject((WE,))
            return _owned_zh(owner, words, index + 1)
        kin = _kin_zh(word, False)
        if kin is not None:  # "同事小李", "老板是周总": the user's
            return Subject((USER, kin[0]), _name_after(words, index + 1), (kin[1],))
        if word in ZH_NOT_NAMES or _a_thing(word):
            continue
        if flag == "nr" or ZH_NAME.match(word):
            after = words[index + 1 : index + 3]
            if len(after) == 2 and after[0][0] == "的" and (kin := _kin_zh(after[1][0], True)) is not None:
                return Subject((f"name:{word}", kin[0]), None, (kin[1],))  # "老陈的儿子": someone of theirs
            return Subject(("name",), word)
        if word in ZH_THIRD:
            return Subject((SOMEONE,))
        if flag.startswith(ZH_STOP_FLAGS) or word == "是":
            break
    return None


def _a_thing(word: str) -> bool:
    """A word the lexicon knows as a thing or a topic (jieba tags some as names: "白班")."""
    return bool(concepts_in(word) or topics_in(word))


def _owned_zh(owner: Subject, words: list[tuple[str, str]], index: int) -> Subject:
    """After "我" / "我们": one of theirs if a kin or role word comes within a few words, before any
    verb ("我妈", "我的大学室友", "我们部门经理"); "我和李明" is we; else the owner itself."""
    if index < len(words) and words[index][0] in ("和", "跟", "与", "同"):
        return Subject((WE,))
    for offset, (word, flag) in enumerate(words[index : index + 4]):
        kin = _kin_zh(word, offset == 0 or words[index + offset - 1][0] == "的")
        if kin is not None:
            relation, term = kin
            return Subject((*owner.path, relation), _name_after(words, index + offset + 1), (*owner.terms, term))
        if flag.startswith(ZH_STOP_FLAGS) or word in ("是", "也", "都", "还", "就", "不", "没"):
            break
    return owner


def _joined_names(words: list[tuple[str, str]]) -> list[tuple[str, str]]:
    """jieba cuts some nicknames in two ("小美" as 小 + 美): joined back into one name."""
    out: list[tuple[str, str]] = []
    for word, flag in words:
        if out and out[-1][0] in ("小", "老", "阿") and len(word) == 1 and re.match(r"[\u3400-\u9fff]", word):
            out[-1] = (out[-1][0] + word, "nr")
        else:
            out.append((word, flag))
    return out


def _kin_zh(word: str, owned: bool) -> tuple[str, str] | None:
    """(relation, the word it was said in) for a kin or role word; one-character ones only when
    owned ("我姐")."""
    if owned and word in ZH_SHORT_KIN:
        return ZH_SHORT_KIN[word], ZH_REFERENT.get(word, word)
    people = people_in(word)
    if people and people[0].start == 0 and people[0].end == len(word):
        return people[0].concept, ZH_REFERENT.get(word, word)
    return None


def _name_after(words: list[Any], index: int) -> str | None:
    """The name given right after a relation: "同事小李", "我女儿小美"."""
    if index < len(words):
        word, flag = words[index]
        if flag == "nr" or ZH_NAME.match(word):
            return str(word)
    return None


def same_person(a: Subject, b: Subject) -> Sameness:
    """Whether two statements' subjects are one person (see the module's docstring)."""
    if SOMEONE in (a.path[0], b.path[0]):
        return Sameness.different
    if a.name and b.name:
        if a.name != b.name:
            return Sameness.different
        # "Biscuit" is the Biscuit the user spoke of; the user's dog and the parents' dog both
        # called Biscuit are two dogs
        return Sameness.same if ("name",) in (a.path, b.path) or a.path == b.path else Sameness.different
    if {a.path, b.path} == {(USER,), (WE,)} and not (a.name or b.name):  # "we moved": the user's household
        return Sameness.perhaps
    one_at_home = _place_of_user(a.path) != _place_of_user(b.path) and not (a.name or b.name)
    if one_at_home and {a.path[:1], b.path[:1]} == {(USER,)}:
        return Sameness.perhaps  # "家里电脑" and "my computer": perhaps the same one
    if a.path != b.path:
        return Sameness.different
    if a.name or b.name:  # "my sister" and "my sister Mia"
        return Sameness.perhaps
    if a.path == (USER,):
        return Sameness.same
    if a.path == (WE,):
        return Sameness.same  # the user's household, said by the user
    if _terms_differ(a.terms, b.terms):
        return Sameness.different  # 叔叔 and 舅舅, an older and a younger sister: two people
    return Sameness.same if a.path[-1] in ONLY_ONE else Sameness.perhaps


def _place_of_user(path: tuple[str, ...]) -> bool:
    """The user's own place ("家里", "our office"): its things are the user's."""
    return len(path) == 2 and path[0] == USER and path[1] in PLACES


def _terms_differ(a: tuple[str, ...], b: tuple[str, ...]) -> bool:
    """Two words each naming one person of a relation (叔叔, "older sister"), and not the same one."""
    return any(x != y and _specific(x) and _specific(y) for x, y in zip(a, b, strict=False))


def _specific(term: str) -> bool:
    return term in ZH_REFERENT.values() or ":" in term
