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
from dataclasses import dataclass, field, fields, replace
from functools import lru_cache

from engram.domain.cues import (
    ATTRIBUTE_RE,
    ATTRIBUTES,
    CHANGE,
    CHANGE_NEW,
    CHANGE_OLD,
    CJK,
    CLAUSE_SPLIT,
    COPULA,
    FUTURE,
    LIGHT_EN,
    LIGHT_ZH,
    NAME_VALUE,
    NEGATION_EN,
    NEGATION_ZH,
    PERSONS,
    PREDICATES,
    SELF_EN,
    SELF_ZH,
    SET_TO,
    STRONG_CHANGE,
    SURNAME_NAME,
)
from engram.domain.lexicon import (
    concepts_in,
    domain_of,
    is_domain,
    one_at_a_time,
    people_in,
    topic_changes_in,
    topics_in,
    within,
)
from engram.domain.numbers import dates_of, numbers_of
from engram.domain.perspective import as_the_user_said_it
from engram.domain.subjects import THE_USER, Subject, is_verb, known_word, subject_of
from engram.domain.text import guess_language
from engram.domain.tokenize import query_tokens
from engram.domain.utterance import sentences, speaker_label, strip_filler


@dataclass(frozen=True)
class Claim:
    text: str
    language: str
    subject: Subject  # who: the user, one of theirs, someone named (domain/subjects.py)
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
    topics: frozenset[str] = frozenset()  # topics of a life it is about (lexicon.topics_in)
    topic_changes: frozenset[str] = frozenset()  # topics it tells of changing ("unpacking in Denver")
    strong_change: bool = False  # announced outright ("switched", "现在", "已经"): enough to retire a topic

    @property
    def slot(self) -> str | None:
        return f"{self.subject.key}|{self.attribute}" if self.attribute else None

    @property
    def filed_under(self) -> str | None:
        """Where a memory is filed for a later change to find it whatever its words: its slot when
        it names an attribute, else the one-at-a-time topic it is about ("I love my Honda Civic"
        and "Loving my new Tesla" are both the user's car)."""
        if self.attribute and not self.attribute.startswith("likes:"):
            return self.slot
        single = sorted(t for t in self.topics if one_at_a_time(t))
        if len(single) == 1:
            return f"{self.subject.key}|topic:{single[0]}"
        return self.slot


def _language(text: str) -> str:
    return "zh" if guess_language(text) == "zh" else "en"


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
    rest = SELF_EN.sub(" ", rest)
    rest = LIGHT_ZH.sub(" ", SELF_ZH.sub(" ", rest)) if CJK.search(rest) else rest
    rest = NEGATION_EN.sub(" ", NEGATION_ZH.sub(" ", rest))
    words = {t for t in query_tokens(rest) if t not in LIGHT_EN and len(t) > 0}
    return frozenset(kept | words)


def _value(text: str) -> frozenset[str]:
    """A value as concepts when the lexicon names it (the most specific), else its own words."""
    named = [m.concept for m in concepts_in(text)]
    specific = {c for c in named if not any(o != c and within(o, c) for o in named) and not is_domain(c)}
    if specific:
        return frozenset(specific)
    words = {t for t in query_tokens(LIGHT_ZH.sub(" ", text)) if t not in LIGHT_EN}
    return frozenset(words)


def _copula_attribute(np: str, value: str) -> str | None:
    """The attribute a "X is Y" statement sets: its attribute nouns ("password", "手机号") with the
    other words of an English X ("netflix password"), or "who" when X is a person and Y a name."""
    names = list(ATTRIBUTES)
    found = {names[int(next(k for k, v in m.groupdict().items() if v)[1:])] for m in ATTRIBUTE_RE.finditer(np)}
    if not found:
        persons = {m.concept for m in people_in(np)} & PERSONS
        return "who" if persons and (NAME_VALUE.match(value) or SURNAME_NAME.match(value)) else None
    if not CJK.search(np):
        rest = ATTRIBUTE_RE.sub(" ", np)
        for m in sorted(people_in(rest), key=lambda m: -m.start):
            rest = rest[: m.start] + " " + rest[m.end :]
        found |= {t for t in query_tokens(SELF_EN.sub(" ", rest)) if t not in LIGHT_EN and not t.isdigit()}
    return " ".join(sorted(found))


def _clauses(text: str) -> list[str]:
    """A statement's clauses, for the one that names a slot: "Linda left; my new manager is Raj".
    A piece that is only who is speaking of ("my girlfriend and I just adopted a puppy") stays with
    what it says."""
    pieces, start = [], 0
    for cut in CLAUSE_SPLIT.finditer(text):
        pieces.append((text[start : cut.start()], text[cut.start() : cut.end()]))
        start = cut.end()
    pieces.append((text[start:], ""))
    out: list[str] = []
    carried = ""
    for piece, separator in pieces:
        if not re.search(r"\w", piece):
            continue
        if separator.strip().lower() == "and" and _only_who(piece):
            carried += piece + separator
            continue
        out.append(carried + piece)
        carried = ""
    return out or [text]


def _only_who(piece: str) -> bool:
    """A few words naming people and no verb: "my girlfriend", "Tom"."""
    words = re.findall(r"[A-Za-z']+", piece)
    return 0 < len(words) <= 3 and not any(is_verb(w.lower()) for w in words)


_QUESTION = re.compile(r"[?？]\s*$")


@dataclass(frozen=True)
class Said:
    """What a statement says, as read: its words without a speaker's label or questions (a question
    claims nothing), and who "I" is in it."""

    text: str
    speaker: Subject
    sentences: int


@lru_cache(maxsize=8192)
def read_said(text: str) -> Said:
    text = as_the_user_said_it(strip_filler(text))
    speaker = THE_USER
    label = speaker_label(text)
    if label is not None:
        speaker, text = Subject(("name",), label.group(1).lower()), text[label.end() :]
    parts = sentences(text, keep_end=True)
    kept = [p for p in parts if not _QUESTION.search(p)] or parts
    return Said(" ".join(kept) if len(kept) < len(parts) else text, speaker, len(kept))


def atomic(text: str) -> bool:
    """Short enough to be one fact or two, as a person states them (most of a chat message's
    sentences state nothing the rules should retire others by)."""
    s = read_said(text)
    size = len(re.findall(r"[A-Za-z0-9]+", s.text)) + len(CJK.findall(s.text)) / 2
    return s.sentences <= 2 and size <= 30


def _change_values(text: str) -> tuple[frozenset[str], frozenset[str]]:
    """Old and new values of a change: "from coffee to tea", "不喝咖啡了，改喝茶", "tea instead of
    coffee", "no longer X". The old value runs from its marker to the next new-value marker."""
    mentions = concepts_in(text)
    old_marker = CHANGE_OLD.search(text)
    if old_marker is None:
        return frozenset(), frozenset(m.concept for m in mentions) or _value(text)
    next_new = next((m for m in CHANGE_NEW.finditer(text, old_marker.end())), None)
    start, end = old_marker.end(), next_new.start() if next_new is not None else len(text)
    old = {m.concept for m in mentions if start <= m.start < end} or set(_value(text[start:end]))
    new = {m.concept for m in mentions if not start <= m.start < end}
    if not new and next_new is not None:
        new = set(_value(text[next_new.end() :]))
    return frozenset(old - new), frozenset(new)


@lru_cache(maxsize=8192)
def read_claim(text: str) -> Claim:
    """The claim of one statement (see the module's docstring): the last of its clauses that names
    a slot, which says what is true now ("Linda left; my new manager is Raj"); pure, so each text
    is read once."""
    statement = read_said(text)
    text = statement.text
    base = _base(text)
    clauses = _clauses(text)
    subjects = _clause_subjects(clauses, base.language, statement.speaker)
    for clause, subject in reversed(list(zip(clauses, subjects, strict=True))):
        found = _read_clause(clause, base, subject)
        if found is not None:
            return found
    if base.change and (base.old_values or base.new_values):  # "I switched from coffee to tea"
        last = clauses[-1]  # "Our office moved close to home, so I walk to work now": the user
        cue = CHANGE.search(last.lower() if base.language == "en" else last)
        before = last[: cue.start()] if cue is not None else text
        domain = _domain("", base.lowered, base.old_values | base.new_values)
        return _claim(base, subject=subject_of(before, subjects[-1]), attribute=domain, values=base.new_values)
    return _claim(base, subject=subjects[0])


@lru_cache(maxsize=8192)
def read_claims(text: str) -> tuple[Claim, ...]:
    """Every claim of a statement, one per clause, each read alone with its own words ("I love
    coffee, I drink two cups every morning": likes coffee, drinks cups; "老公去年走了，现在我一个人
    过": the husband's, then the user's), and its main claim (read_claim) last."""
    statement = read_said(text)
    clauses = _clauses(statement.text)
    if len(clauses) < 2:
        return (read_claim(text),)
    language = _language(statement.text)
    found = []
    for clause, subject in zip(clauses, _clause_subjects(clauses, language, statement.speaker), strict=True):
        base = _base(clause)
        found.append(_read_clause(clause, base, subject) or _claim(base, subject=subject))
    main = read_claim(text)
    return (*(c for c in found if c != main), main)


@dataclass(frozen=True)
class _Base(Claim):
    lowered: str = ""


def _base(text: str) -> _Base:
    """What the whole statement says before any clause is read: its language, negation, change,
    plan, values of a change, words, numbers, dates and topics; about the user until a clause
    says whom."""
    language = _language(text)
    lowered = text.lower() if language == "en" else text
    negated = bool(NEGATION_EN.search(lowered) if language == "en" else NEGATION_ZH.search(lowered))
    change_cue = CHANGE.search(lowered)
    old, new = _change_values(lowered) if change_cue else (frozenset(), frozenset())
    future = bool(FUTURE.search(lowered))
    return _Base(
        text,
        language,
        THE_USER,
        negated=negated,
        change=change_cue is not None and not future,
        future=future,
        old_values=old,
        new_values=new,
        content=_content(lowered, language),
        numbers=numbers_of(text),
        dates=dates_of(text),
        topics=topics_in(lowered),
        topic_changes=topic_changes_in(lowered),
        strong_change=change_cue is not None and not future and bool(STRONG_CHANGE.search(lowered)),
        lowered=lowered,
    )


def _clause_subjects(clauses: list[str], language: str, speaker: Subject = THE_USER) -> list[Subject]:
    """Who each clause is about: the person it names first, else the one before it names ("My
    sister lives in Boston, works at MGH": both the sister's). "I" is the speaker (the user, or the
    speaker of a conversation line), "my sister" the speaker's."""
    out, subject = [], speaker
    for clause in clauses:
        subject = _as_said_by(subject_of(clause, subject), speaker)
        out.append(subject)
    return out


def _as_said_by(subject: Subject, speaker: Subject) -> Subject:
    if speaker.is_user or subject.path[0] != "user":
        return subject
    owner = f"name:{speaker.name}"
    return speaker if subject.is_user else Subject((owner, *subject.path[1:]), subject.name, subject.terms)


def _claim(base: _Base, **said: object) -> Claim:
    """A plain claim (no working fields) from the statement's base and what a clause says."""
    claim = replace(base, **said)  # type: ignore[arg-type]
    return Claim(**{f.name: getattr(claim, f.name) for f in fields(Claim)})


def _read_clause(clause: str, base: _Base, default: Subject) -> Claim | None:
    """The claim of a clause that names a slot (a predicate, "changed X to Y", "X is Y"), else None.
    ``default``: who the clause is about if it names nobody."""
    language = base.language
    lowered = clause.lower() if language == "en" else clause
    original = clause if len(lowered) == len(clause) else lowered  # the same offsets in either
    if clause.strip() != base.text.strip():  # the topics of this clause's subject, not of the others'
        base = replace(base, topics=topics_in(lowered), topic_changes=topic_changes_in(lowered))

    def subject(before: int) -> Subject:
        return subject_of(original[:before], default)

    named = _SELF_NAMED.match(original)  # "I'm Sarah Mitchell", "It's Sarah Okafor now!"
    if named is not None and not any(known_word(w) for w in named.group(1).split()):
        values = frozenset(w.lower() for w in named.group(1).split())
        return _with_who(_claim(base, subject=THE_USER, attribute="name", single=True, values=values))

    for predicate in PREDICATES:
        match = predicate.pattern.search(lowered)
        if match is None:
            continue
        # Who it is about: the words before the predicate, or before the old value of a change
        # ("我最近从咖啡换成了茶": not "从咖啡").
        cut_at = min([match.start(), *(m.start() for m in [CHANGE_OLD.search(lowered)] if m)])
        value_text = lowered[match.end() :]
        values = _value(value_text)
        attribute = predicate.attribute or _domain(value_text, lowered, values)
        if predicate.attribute == "favourite":  # one favourite of a kind, apart from what else is liked
            attribute = f"favourite {_domain(value_text, lowered, values) or _copula_attribute(lowered, '')}"
        who = subject(cut_at)
        if predicate.attribute == "name":  # "I have a dog named Max": the dog's name, not the user's
            who = _named_one(original[:cut_at], who, values)
        return _with_who(
            _claim(
                base,
                subject=who,
                attribute=attribute,
                single=predicate.single,
                negated=base.negated or predicate.negative,
                values=values,
            )
        )
    set_to = SET_TO.search(lowered)  # "I changed my Netflix password to thunderbolt", "把密码改成了X"
    if set_to is not None:
        np, value_text = set_to.group("np") or set_to.group("np_zh"), set_to.group("value") or set_to.group("value_zh")
        attribute = _copula_attribute(np, value_text)
        if attribute is not None:
            values = _value(value_text) | numbers_of(value_text)
            start, end = set_to.span("np") if set_to.group("np") else set_to.span("np_zh")
            who = subject_of(original[: set_to.start()] + " " + original[start:end], default)
            return _with_who(_claim(base, subject=who, attribute=attribute, single=True, values=values, change=True))
    copula = COPULA.match(lowered.strip())
    if copula is not None:
        np = copula.group("np") or copula.group("np_zh") or ""
        value_text = copula.group("value") or copula.group("value_zh") or ""
        original_value = clause.strip()[len(clause.strip()) - len(value_text) :]
        attribute = _copula_attribute(np, original_value)
        if attribute is not None:
            values = _value(value_text) | numbers_of(value_text)
            who = subject_of(original.strip()[: len(np)], default)
            return _with_who(_claim(base, subject=who, attribute=attribute, single=True, values=values))
    return None


# The user saying who they are: a capitalised name right after "I'm" (a word of the language, as in
# "I'm Catholic", is not a name).
_SELF_NAMED = re.compile(r"^\s*(?i:i'm|i’m|i am|im|it's|it’s|it is|this is)\s+([A-Z][a-z'’-]+(?:\s+[A-Z][a-z'’-]+)*)")


# The topic an attribute a clause sets belongs to: "我住杭州滨江" is about where one lives, as "我们回
# 老家长沙了" is, though only one says a topic's word.
_ATTRIBUTE_TOPICS = {
    "residence": "residence",
    "employer": "job",
    "occupation": "job",
    "job": "job",
    "company": "job",
    "name": "name",
    "email": "contact",
    "phone": "contact",
    "school": "education",
    "degree": "education",
    "car": "car",
}


def _with_who(claim: Claim) -> Claim:
    """Someone else's name is who they are ("my wife's name is X", "我老婆叫X"), a one-value slot of
    theirs apart from the user's own name; the attribute's topic is one of the claim's."""
    if claim.attribute in _ATTRIBUTE_TOPICS:
        claim = replace(claim, topics=claim.topics | {_ATTRIBUTE_TOPICS[claim.attribute]})
    if claim.attribute == "name" and not claim.subject.is_user:
        return replace(claim, attribute="who")
    return claim


def _named_one(before: str, who: Subject, name: frozenset[str]) -> Subject:
    """ "I have a dog named Max", "我家的猫叫咪咪": the thing or person last named before the name
    (the dog), as the subject's; else the subject itself. A pet is known by its name after ("Max's
    all better" is the same dog); a person's name is who they are (a slot of their relation's)."""
    named = [m.concept for m in concepts_in(before.lower()) if domain_of(m.concept) == "pet"]
    people = [m.concept for m in people_in(before.lower())]
    found = named or people
    last = found[-1] if found else None
    if last is None or (who.path and who.path[-1] == last):
        return who
    owner = (f"name:{who.name}",) if who.name else who.path  # "Tom's dog is called Rex"
    called = next(iter(sorted(name)), None) if named and len(name) == 1 else None
    return Subject((*owner, last), called, (*who.terms, last))


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
