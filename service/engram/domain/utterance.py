"""A user's turn as the statements it makes, in the user's own words (pure, never raises).

A turn is cut into sentences at sentence punctuation, and a sentence into clauses only where the
next clause starts over with its own first-person subject and is understood alone: "I moved to
Berlin, I work at Siemens now" is two statements, "I love coffee, I drink two cups every
morning" (two cups of what?) and "Sophie likes jazz, she plays piano" (who?) are one. Filler
said before or after ("Oh and", "btw", "对了，", "lol", "哈哈") is dropped. Every cut, and every
piece of filler dropped, falls between two words: a statement is always a run of whole words of
the turn ("Sophie" never loses "So", "酒吧" never loses "吧"), its characters as they were sent.
"""

from __future__ import annotations

import re

from engram.domain.cues import (
    BACK_REFERENCE,
    CLAUSE_START,
    LEAD_FILLER,
    MEASURE_WITHOUT_WHAT,
    SUBORDINATE_START,
    TRAIL_FILLER,
)
from engram.domain.subjects import known_word
from engram.domain.tokenize import segment

_SENTENCE_END = re.compile(r"(?<=[。！？!?；;\n])|(?<=[.])\s+")
# A dot that ends no sentence: "Mr. Smith", "St. Louis", "3 p.m. tomorrow", "the U.S.", "J. K. Rowling".
_ABBREVIATION = re.compile(
    r"(?:^|[\s(])(?:mr|mrs|ms|dr|st|prof|jr|sr|vs|etc|mt|ave|inc|ltd|co|no|e\.g|i\.e|a\.m|p\.m|u\.s|u\.k|"
    r"[a-z])\.$",
    re.IGNORECASE,
)
_CJK_RUN = re.compile(r"[\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff]+")
# A Latin word: letters and digits, joined by inner hyphens or apostrophes ("right-handed", "I'm").
_LATIN_WORD = re.compile(r"[^\W_\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff]+(?:['’\-][^\W_\u3400-\u9fff]+)*")
_EDGE = " \t\r\n,，、.。;；:：!！?？~～…"


# "Caroline: I went to a support group": a line of a conversation, its speaker first.
_SPEAKER_LABEL = re.compile(r"^\s*([A-Z][\w'’.-]*(?:\s[A-Z][\w'’.-]*){0,2}):\s+(?=\S)")


def speaker_label(text: str) -> re.Match[str] | None:
    """The speaker's label a line of a conversation starts with ("Caroline: ..."), if it does (not
    "Note: ..." or "Update: ...": a word is no speaker)."""
    found = _SPEAKER_LABEL.match(text)
    if found is None or known_word(found.group(1).split()[0]):
        return None
    return found


def words(text: str) -> list[tuple[int, int]]:
    """Where each word of the text starts and ends: Latin words whole, Chinese as jieba cuts them."""
    spans = [m.span() for m in _LATIN_WORD.finditer(text)]
    for run in _CJK_RUN.finditer(text):
        at = run.start()
        for word in segment(run.group(0)):
            spans.append((at, at + len(word)))
            at += len(word)
    return sorted(spans)


def between_words(text: str, position: int) -> bool:
    """Whether a cut at ``position`` falls between two words (or at an end), never inside one."""
    return not any(start < position < end for start, end in words(text))


def strip_filler(text: str) -> str:
    """'Oh and I really like americano coffee lol' -> 'I really like americano coffee'; a text that
    is nothing but filler is left as it is."""
    original = text.strip()
    kept = _without_trailing(_without_leading(original))
    return _trimmed(kept) or original


def _trimmed(text: str) -> str:
    """Without the punctuation and spaces around it, but for an abbreviation's dot ("the U.S.")."""
    trimmed = text.strip(_EDGE)
    if text.rstrip().endswith(".") and _ABBREVIATION.search(trimmed + "."):
        return trimmed + "."
    return trimmed


def _without_leading(text: str) -> str:
    while (found := LEAD_FILLER.match(text)) is not None and found.end() > 0:
        if not between_words(text, found.end()) or not text[found.end() :].strip(_EDGE):
            break
        text = text[found.end() :].lstrip(_EDGE)
    return text


def _without_trailing(text: str) -> str:
    while (found := TRAIL_FILLER.search(text)) is not None and found.start() < len(text):
        if not between_words(text, found.start()) or not text[: found.start()].strip(_EDGE):
            break
        text = text[: found.start()].rstrip(_EDGE)
    return text


def sentences(text: str, *, keep_end: bool = False) -> list[str]:
    """The text's sentences, cut at sentence punctuation, never after an abbreviation's dot, which
    also stays where a sentence ends with it ("We moved to the U.S."); with ``keep_end``, each with
    the punctuation it ended with (a question keeps its "?")."""
    parts: list[str] = []
    for piece in _SENTENCE_END.split(text):
        if parts and _ABBREVIATION.search(parts[-1].rstrip()):
            parts[-1] = f"{parts[-1].rstrip()} {piece.lstrip()}"
        else:
            parts.append(piece)
    kept = [p.strip() for p in parts if p and re.search(r"\w", p)]
    return kept if keep_end else [_without_end(p) for p in kept]


def _without_end(sentence: str) -> str:
    """The sentence without its closing punctuation (the dot of an abbreviation stays)."""
    kept = sentence.rstrip("。；;！!")
    if kept.endswith(".") and not _ABBREVIATION.search(kept):
        kept = kept.rstrip(".").rstrip("。；;！!")
    return kept.strip()


def clauses(sentence: str) -> list[str]:
    """The sentence's self-contained clauses: cut only before a clause that starts over with its
    own first-person subject, names what it speaks of (no "it", "那里", "two cups" of nothing), and
    follows a clause that is not subordinate ("When I was a kid, ...")."""
    pieces, start = [], 0
    for cut in CLAUSE_START.finditer(sentence):
        head, rest = sentence[start : cut.start()], sentence[cut.end() :]
        if not head.strip(_EDGE) or SUBORDINATE_START.match(head.strip(_EDGE)):
            continue
        if BACK_REFERENCE.search(_first_clause(rest)) or MEASURE_WITHOUT_WHAT.search(_first_clause(rest)):
            continue
        pieces.append(head)
        start = cut.end()
    pieces.append(sentence[start:])
    return [p for p in pieces if p.strip(_EDGE)]


def _first_clause(text: str) -> str:
    """The text up to the next clause boundary, where a later cut would fall."""
    following = CLAUSE_START.search(text)
    return text[: following.start()] if following is not None else text


def statements(text: str) -> list[str]:
    """The turn's statements: its sentences, each cut into self-contained clauses, without filler."""
    out = []
    for sentence in sentences(text):
        for clause in clauses(sentence):
            statement = _trimmed(strip_filler(clause))
            if statement and not only_filler(statement):
                out.append(statement)
    return out


def only_filler(text: str) -> bool:
    """Nothing but filler ("Well", "ok so", "哈哈"): no statement of its own."""
    rest = text.strip(_EDGE)
    while rest and (found := LEAD_FILLER.match(rest)) is not None and found.end() > 0:
        rest = rest[found.end() :].strip(_EDGE)
    return not rest or TRAIL_FILLER.fullmatch(rest) is not None
