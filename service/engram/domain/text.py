"""Text normalisation, language guess and the exact-duplicate key."""

from __future__ import annotations

import hashlib
import re
import unicodedata

_CJK = re.compile(r"[\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff]")
_LATIN = re.compile(r"[A-Za-z]")
_SPACE = re.compile(r"\s+")


def normalise(text: str) -> str:
    """NFKC, casefolded, whitespace collapsed: the form two exact duplicates share."""
    return _SPACE.sub(" ", unicodedata.normalize("NFKC", text)).strip().casefold()


def guess_language(text: str) -> str:
    """'zh' when Chinese characters dominate the letters, 'en' for Latin script, 'und' otherwise.

    Enough for the zh/en routing the tokeniser needs; not a general language identifier.
    """
    cjk = len(_CJK.findall(text))
    latin_words = len(re.findall(r"[A-Za-z]+", text))
    if cjk == 0 and latin_words == 0:
        return "und"
    # One Chinese character carries about as much as one English word.
    return "zh" if cjk >= latin_words else "en"


# A query longer than this is a message or a pasted conversation rather than a question.
QUESTION_CHARS = 160


def is_conversation(query: str) -> bool:
    """A pasted conversation or a long message, not a search question: an LLM may rewrite it into
    one, and its time words ("yesterday the teacher praised me") tell the story rather than which
    memory to recall."""
    return "\n" in query.strip() or len(query) > QUESTION_CHARS


def duplicate_key(content: str, layer: str, scope: str | None, kind: str = "fact", owner: str | None = None) -> str:
    """Two memories with the same key are exact duplicates (enforced by a unique index). A fact's
    scope is its session or task (short-lived layers); a turn's is always its conversation, so the
    same line in two conversations is two turns. Two users' memories are never duplicates (the
    tenant's own keep the key they always had)."""
    parts = (layer, scope or "", normalise(content))
    raw = "\x1f".join(parts if kind == "fact" else ("turn", *parts))
    if owner:
        raw = f"user\x1f{owner}\x1f{raw}"
    return hashlib.sha256(raw.encode()).hexdigest()
