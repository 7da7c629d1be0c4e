"""Application-side tokeniser for the keyword channel.

PostgreSQL's text search does not segment Chinese, so tokens are made here and stored as a
tsvector: CJK text becomes character bigrams (plus unigrams, so one-character words match),
Latin text becomes lower-cased, stemmed words ("likes" and "liked" match "like"), and
identifiers (12345, CA981, emails) stay whole.

A Chinese query is cut into words first (jieba), so its tokens are its words: a one-character
word ("喝") is its unigram, a longer one its bigrams, and no token straddles two words ("时喝" in
"平时喝什么" is nobody's word, matches nothing, and would only dilute the words that do match).
Question words ("什么", "哪里") say what is asked, not what to find, and are left out.
"""

from __future__ import annotations

import re
import unicodedata
from functools import lru_cache
from typing import Any

import snowballstemmer

from engram.domain.identifiers import extract_identifiers, query_identifiers

_CJK_RUN = re.compile(r"[\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff]+")
_WORD = re.compile(r"[a-z0-9]+", re.ASCII)
_STEMMER = snowballstemmer.stemmer("english")

# Function words that match everywhere and carry no meaning for retrieval.
EN_STOPWORDS = frozenset(
    """a an the and or but if of to in on at by for with from as is are was were be been being am
    i me my we our you your he him his she her it its they them their this that these those
    do does did have has had not no so than then there what which who whom how when where why
    will would can could should shall may might must about into over just also very too
    s t d m ll re ve""".split()
)
ZH_STOPCHARS = frozenset("的了是在我你他她它们这那和与也都就吗呢吧啊")
ZH_QUESTION_WORDS = frozenset(
    "什么 什么时候 时候 怎么 怎样 怎么样 为什么 为何 哪 哪里 哪儿 哪些 哪个 哪家 哪位 谁 几 多少 多久 是不是 有没有 "
    "能不能 会不会 要不要 啥 咋 呀 嘛 么".split()
)
# Every memory of a tenant is about its user: asking for "the user" asks for nothing in particular.
QUERY_STOPWORDS = frozenset({"user", "users", "用户"})


def document_tokens(text: str) -> list[str]:
    """Tokens of a stored memory, in order (repeats kept: term frequency counts)."""
    return _tokens(text, unigrams=True)


def query_tokens(text: str) -> list[str]:
    """Distinct tokens of a query: Chinese by its words, the rest as in a document."""
    text = unicodedata.normalize("NFKC", text).casefold()
    out: list[str] = list(query_identifiers(text))
    for run in _CJK_RUN.findall(text):
        for word in segment(run):
            if word in ZH_QUESTION_WORDS or word in QUERY_STOPWORDS or (len(word) == 1 and word in ZH_STOPCHARS):
                continue
            out.extend([word] if len(word) <= 2 else _cjk_tokens(word, unigrams=False))
    latin = _CJK_RUN.sub(" ", text)
    out.extend(_stem(w) for w in _WORD.findall(latin) if w not in EN_STOPWORDS and w not in QUERY_STOPWORDS)
    return list(dict.fromkeys(out))


def segment(run: str) -> tuple[str, ...]:
    """A run of Chinese characters cut into words (with jieba's HMM, unknown names stay whole:
    "顺丰", "陈奕迅"); cached, so a tuple nobody can change."""
    return _cut(run)


@lru_cache(maxsize=16384)
def _cut(run: str) -> tuple[str, ...]:
    return tuple(_segmenter().lcut(run))


@lru_cache(maxsize=1)
def _segmenter() -> Any:
    """jieba, with its dictionary loaded (about a second, once per process)."""
    import logging

    import jieba

    jieba.setLogLevel(logging.WARNING)
    jieba.initialize()
    return jieba


def warm_up() -> None:
    """Load the Chinese word dictionary now rather than on the first Chinese query."""
    _segmenter()


def _tokens(text: str, *, unigrams: bool) -> list[str]:
    text = unicodedata.normalize("NFKC", text).casefold()
    out: list[str] = list(extract_identifiers(text))
    for run in _CJK_RUN.findall(text):
        out.extend(_cjk_tokens(run, unigrams=unigrams))
    latin = _CJK_RUN.sub(" ", text)
    out.extend(_stem(w) for w in _WORD.findall(latin) if w not in EN_STOPWORDS)
    return out


@lru_cache(maxsize=65536)
def _stem(word: str) -> str:
    return word if word.isdigit() else _STEMMER.stemWord(word)


def _cjk_tokens(run: str, *, unigrams: bool) -> list[str]:
    if len(run) == 1:
        return [] if run in ZH_STOPCHARS else [run]
    grams = [run[i : i + 2] for i in range(len(run) - 1)]
    if unigrams:
        grams.extend(ch for ch in run if ch not in ZH_STOPCHARS)
    return grams


# PostgreSQL holds a lexeme of at most 2,047 bytes: a longer run (a URL with a token, a hex
# blob) is indexed by its start, 256 characters, up to 1 KB of UTF-8.
MAX_TOKEN_CHARS = 256


def _fit(token: str) -> str:
    return token[:MAX_TOKEN_CHARS]


def to_tsvector_literal(tokens: list[str]) -> str:
    """A tsvector literal with positions, parsed by PostgreSQL without any normalisation."""
    positions: dict[str, list[int]] = {}
    for pos, token in enumerate((_fit(t) for t in tokens[:4000]), start=1):
        positions.setdefault(token, []).append(min(pos, 16383))
    return " ".join(f"{_quote(t)}:{','.join(map(str, p[:256]))}" for t, p in positions.items())


def to_tsquery_literal(tokens: list[str]) -> str | None:
    """An OR-query over the tokens, or None when nothing is searchable."""
    if not tokens:
        return None
    return " | ".join(_quote(_fit(t)) for t in tokens)


def _quote(token: str) -> str:
    return "'" + token.replace("\\", "\\\\").replace("'", "''") + "'"
