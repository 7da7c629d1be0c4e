"""An independent check that a statement is made of a turn's words: a contiguous run of the turn
that starts and ends between words (Latin words whole, with their inner hyphens and apostrophes;
Chinese words as jieba cuts the turn), so no word is ever cut. Written apart from the code it
checks (engram/domain/utterance.py) so that one bug cannot hide in both."""

from __future__ import annotations

import difflib
import re
from functools import cache

import jieba

_LATIN = re.compile(r"[A-Za-z0-9\u00c0-\u024f]")
_JOINER = "-'’"
_CJK_RUN = re.compile(r"[\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff]+")


@cache
def _cjk_boundaries(text: str) -> frozenset[int]:
    """Positions inside a run of Chinese characters where jieba puts no word boundary."""
    inside = set()
    for run in _CJK_RUN.finditer(text):
        at = run.start()
        for word in jieba.lcut(run.group(0)):
            inside.update(range(at + 1, at + len(word)))
            at += len(word)
    return frozenset(inside)


def _cuts_a_word(text: str, position: int) -> bool:
    if position <= 0 or position >= len(text):
        return False
    before, after = text[position - 1], text[position]
    if _LATIN.match(before) and (_LATIN.match(after) or after in _JOINER):
        return True
    if before in _JOINER and _LATIN.match(after) and position >= 2 and _LATIN.match(text[position - 2]):
        return True
    return position in _cjk_boundaries(text)


def whole_run(turn: str, statement: str) -> bool:
    """Whether ``statement`` occurs in ``turn`` starting and ending between words."""
    start = turn.find(statement)
    while start != -1:
        if not _cuts_a_word(turn, start) and not _cuts_a_word(turn, start + len(statement)):
            return True
        start = turn.find(statement, start + 1)
    return False


# -- the one documented rewrite: the first person as "the user" --------------------------------

_TOKEN = re.compile(r"[A-Za-z]+|['’][A-Za-z]+|\d+|[^\sA-Za-z\d]")
_SELF = {"i", "me", "my", "mine", "myself", "themself", "im"}
_AGREE = {
    "is": "<be>", "am": "<be>", "'m": "<be>", "has": "<have>", "have": "<have>", "'ve": "<have>",
    "does": "<do>", "do": "<do>", "would": "<d>", "had": "<d>", "'d": "<d>", "will": "<ll>", "'ll": "<ll>",
    "doesn": "<do>", "don": "<do>", "hasn": "<have>", "haven": "<have>",
}  # fmt: skip
_STEMMER = __import__("snowballstemmer").stemmer("english")


def _canon(text: str) -> list[str]:
    tokens = [t.lower().replace("’", "'") for t in _TOKEN.findall(text)]
    out: list[str] = []
    i = 0
    while i < len(tokens):
        t = tokens[i]
        if t == "the" and i + 1 < len(tokens) and tokens[i + 1] == "user":
            skip = 3 if i + 2 < len(tokens) and tokens[i + 2] == "'s" else 2
            out.append("<u>")
            i += skip
            continue
        if t in _SELF:
            out.append("<u>")
        elif t in _AGREE:
            out.append(_AGREE[t])
        elif t.startswith("'"):
            out.append(t)
        else:
            stem = _STEMMER.stemWord(t)
            out.append({"goe": "go", "goes": "go"}.get(stem, stem).removesuffix("e"))
        i += 1
    return out


def first_person_only(before: str, after: str) -> bool:
    """Whether ``after`` is ``before`` with nothing changed but the first person written as "the
    user" and the verbs agreeing with it. In Chinese text only "我" as a word of its own (as jieba
    cuts ``before``: not the 我 of 自我, 我国, 我们) may become "用户" or "用户的"; English words are
    compared once pronouns and agreeing verbs are put in one form."""
    own_words = set()  # where 我 starts a word that is no other word's part (我, 我妈; not 自我, 我们, 我国)
    for run in _CJK_RUN.finditer(before):
        at = run.start()
        for word in jieba.lcut(run.group(0)):
            if set(word) == {"我"}:  # "我我": each one
                own_words.update(range(at, at + len(word)))
            elif word.startswith("我") and word not in ("我们", "我俩", "我国", "我们俩"):
                own_words.add(at)
            at += len(word)
    # The Chinese and the rest are compared apart: a diff of the whole text may pair 我 with the
    # "user" of an English "the user" beside it and see a word changed where none was.
    cjk = [(i, ch) for i, ch in enumerate(before) if _CJK_RUN.match(ch)]
    said_cjk, stored_cjk = "".join(ch for _, ch in cjk), "".join(_CJK_RUN.findall(after))
    for op, i1, i2, j1, j2 in difflib.SequenceMatcher(None, said_cjk, stored_cjk, autojunk=False).get_opcodes():
        if op == "equal":
            continue
        old = cjk[i1:i2]
        each = bool(old) and all(ch == "我" and i in own_words for i, ch in old)
        if not (each and re.fullmatch(f"(?:用户的?){{{len(old)}}}", stored_cjk[j1:j2])):
            return False
    return _canon(_CJK_RUN.sub("§", after)) == _canon(_CJK_RUN.sub("§", before))
