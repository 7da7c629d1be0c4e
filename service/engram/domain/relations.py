"""How a new statement relates to a stored one, by rules (pure; the rule judge and the write path
use it, the LLM judge falls back to it).

Read as claims (domain/claims.py), one per clause. Nothing is retired or merged across people: a
statement about another person, or about one the rules cannot tell is the same ("my sister"
twice may be two sisters, "he" is never known to be the same "he"), keeps both; another time,
another number or id keeps both. Within one person: a change retires what states the old value
("switched from coffee to tea"), a new value of a one-value slot (where one lives, a password) is
a conflict, the same value is the same fact (with more words: a supplement). Outside any slot the
value-bearing words decide, and words that differ are never the same fact.

When the rules are unsure (a relation one may have several of, a change said in passing
("these days", "现在"), a one-at-a-time topic said again without a change word), they keep both
and say the new statement **may update** the old one: the write path marks the older memory,
search ranks it below the newer one, and the agent settles it (domain/judgement.py).
"""

from __future__ import annotations

import re

from engram.domain.boundary import readable, visible
from engram.domain.claims import Claim, atomic, lineage_overlap, read_claim, read_claims, states_old_value
from engram.domain.cues import ACQUIRE, ADDITIVE, ENDING, PAST_FRAME, RESUME, STILL, SWITCH, UNITS
from engram.domain.judgement import MergeVerdict, Relation
from engram.domain.lexicon import one_at_a_time
from engram.domain.subjects import Sameness, same_person
from engram.domain.text import normalise

_COMPARATIVE = re.compile(r"\b(over|than|rather|instead of)\b|比|胜过|而不是", re.IGNORECASE)


def _verdict(relation: Relation, reason: str, merged: str | None = None) -> MergeVerdict:
    return MergeVerdict(relation=relation, reason=reason, merged_content=merged)


def announces_change(text: str) -> bool:
    return read_claim(text).change


def announces_change_outright(text: str) -> bool:
    claim = read_claim(text)
    return (claim.strong_change and bool(claim.topics or claim.slot or claim.old_values)) or bool(claim.topic_changes)


def _reversed_comparison(new: Claim, old: Claim) -> bool:
    """ "email over phone" then "phone over email": the same words, compared the other way round."""
    if not (_COMPARATIVE.search(new.text) and _COMPARATIVE.search(old.text)):
        return False
    order = [w for w in re.findall(r"\w+", new.text.lower()) if w in new.content]
    before = [w for w in re.findall(r"\w+", old.text.lower()) if w in old.content]
    return set(order) == set(before) and order != before


def relate_statements(new: str, existing: str) -> MergeVerdict:
    """How ``new`` relates to ``existing``: by their main claims, then by any claim of the new one
    that replaces a claim of the old one ("I switched to tea" against "I love coffee, two cups a
    morning"). A detail merged is the new statement as it was given (a claim's text is the
    statement as read: no speaker, no questions, in the first person). They are read as a reader
    sees them: their control and zero-width characters neither make nor break a match."""
    if not (readable(new) and readable(existing)):
        return _verdict(Relation.different, "nothing visible to compare")
    verdict = _related(visible(new), visible(existing))
    if verdict.relation == Relation.supplement:
        return verdict.model_copy(update={"merged_content": new})
    return verdict


def _related(new: str, existing: str) -> MergeVerdict:
    verdict = relate_claims(read_claim(new), read_claim(existing))
    if not (atomic(new) and atomic(existing)):  # a chat message of many sentences: kept as it is
        if verdict.relation == Relation.same and read_claim(new).content == read_claim(existing).content:
            return verdict
        return _verdict(Relation.different, "not one fact: a message of many sentences is kept as it is")
    if verdict.relation in (Relation.conflict, Relation.same, Relation.supplement):
        return _unless_still(verdict, new, existing)
    strongest = verdict
    for n in read_claims(new):
        for o in read_claims(existing):
            pair = relate_claims(n, o)
            if pair.relation == Relation.conflict:
                return _unless_still(pair, new, existing)
            if pair.relation == Relation.may_update:
                strongest = pair
    return strongest


def _unless_still(verdict: MergeVerdict, new: str, existing: str) -> MergeVerdict:
    """A change that says what it leaves as it was ("换了个两室一厅，还在南山") is no change of what the
    older statement names there."""
    if verdict.relation != Relation.conflict or not STILL.search(new.lower()):
        return verdict
    if _things(read_claim(new).content & read_claim(existing).content):
        return _verdict(Relation.may_update, f"{verdict.reason}, but it says what stays")
    return verdict


def relate_claims(new: Claim, old: Claim) -> MergeVerdict:
    if new.future != old.future:  # a plan and a fact of today are two facts
        return _verdict(Relation.different, "a plan is not what is true today")
    person = same_person(new.subject, old.subject)
    if person == Sameness.different and _called_by_name(new, old):
        person = Sameness.same  # "旺财上个月走了" of the corgi called 旺财
    if person == Sameness.different:
        return _verdict(Relation.different, f"about {new.subject.said}, not {old.subject.said}")
    if new.dates and old.dates and new.dates != old.dates:
        return _verdict(Relation.different, "it happened at another time")
    if _in_the_past(new) and not _in_the_past(old) and new.content != old.content:
        return _verdict(Relation.different, "it tells of an earlier time")
    verdict = _relate_one_person(new, old)
    if person == Sameness.perhaps and _household(new, old, verdict):
        return verdict
    if person == Sameness.perhaps:  # perhaps two people: keep both
        if verdict.relation == Relation.conflict:
            return _verdict(Relation.may_update, f"{verdict.reason}, if it is the same {new.subject.key}")
        if verdict.relation in (Relation.supplement, Relation.same) and new.content != old.content:
            return _verdict(Relation.different, f"perhaps another {new.subject.key}")
    return verdict


# What "we" changes is the user's too: the home, the car, the pets, the couple.
_HOUSEHOLD_TOPICS = frozenset({"residence", "car", "relationship"})


def _called_by_name(new: Claim, old: Claim) -> bool:
    """The new statement starts with the name the older one gave its subject (a pet's, in a
    language whose names the rules cannot tell from words)."""
    name = old.subject.name
    return bool(name) and new.text.lstrip().lower().startswith(str(name)) and new.subject.path[0] != "someone"


def _household(new: Claim, old: Claim, verdict: MergeVerdict) -> bool:
    """A change of the household said as "we" of a statement by the user (or the other way round):
    "we moved to Milwaukee" against "I live in Minneapolis"."""
    pair = {new.subject.path, old.subject.path}
    return (
        verdict.relation == Relation.conflict
        and pair == {("user",), ("we",)}
        and bool(new.topics & old.topics & _HOUSEHOLD_TOPICS)
    )


def _relate_one_person(new: Claim, old: Claim) -> MergeVerdict:
    # "from coffee" said, and coffee stated (in this slot, or where no slot was read)
    leaves = new.change and new.old_values and not old.negated and _states(old, new.old_values)
    if leaves and (new.slot == old.slot or old.attribute is None or not new.slot):
        return _verdict(Relation.conflict, "the new statement leaves this value behind")
    shared_topics = new.topics & old.topics
    announced = new.strong_change or bool(shared_topics & new.topic_changes) or _says(ACQUIRE, new)
    kept = _says(STILL, new) and bool(_things(new.content & old.content))  # "换了个两室一厅，还在南山"
    topic_change = announced and shared_topics and not _states_new(old, new) and not _additive(new) and not kept
    topic_change = topic_change and not new.future  # a plan beside a plan: "saving to buy", "moving next month"
    topics = ", ".join(sorted(shared_topics))
    if topic_change and any(one_at_a_time(t) for t in shared_topics):
        return _verdict(Relation.conflict, f"a change of {topics}")
    ended = _ends(new, old)
    if ended is not None:
        return ended
    if topic_change:  # one hobby, one pet of several
        return _verdict(Relation.may_update, f"perhaps a change of {topics}")
    if new.numbers != old.numbers:
        one_value = new.slot is not None and new.slot == old.slot and new.single and not new.future
        if one_value and new.numbers and old.numbers:  # a number replaced by another: phone, weight
            return _verdict(Relation.conflict, f"a new {new.attribute} (numbers differ)")
        return _verdict(Relation.different, "numbers or ids differ")
    if new.change:
        return _relate_change(new, old)
    if new.future or old.future:  # a plan and a fact of today are two facts
        return (
            _verdict(Relation.same, "the same plan")
            if new.content == old.content
            else _verdict(Relation.different, "a plan is not what is true today")
        )
    if new.slot is not None and new.slot == old.slot:
        return _relate_in_slot(new, old)
    # A one-at-a-time topic said again in other words, by short statements (a line of chat that
    # mentions work is no statement of one's job)
    single = sorted(t for t in shared_topics if one_at_a_time(t))
    said_again = single and new.content != old.content and not _additive(new) and not (new.negated or old.negated)
    if said_again and _short(new) and _short(old):
        return _verdict(Relation.may_update, f"perhaps a new {', '.join(single)}")
    return _relate_by_words(new, old)


def _ends(new: Claim, old: Claim) -> MergeVerdict | None:
    """The new statement ends what the old one states ("cancelled my CrossFit membership" against
    "I go to CrossFit five days a week"), or takes up again what it ended ("started smoking
    again" against "I quit smoking"): a conflict when what they share is the old statement's
    value, perhaps one when it is only a word of it."""
    shared = new.content & old.content
    if not shared:
        return None
    ending, resuming = _says(ENDING, new), _says(RESUME, new) and (_says(ENDING, old) or old.negated)
    # "我不吃香菜" -> "现在觉得香菜挺香的": what was denied is now said
    flipped = old.negated and old.attribute is not None and not new.negated and new.strong_change
    flipped = flipped and bool(old.values & new.content)
    resuming = resuming or flipped
    if not (ending and not _says(ENDING, old) and not old.negated) and not resuming:
        return None
    what = ", ".join(sorted(shared))
    if shared & (old.values | old.new_values) or resuming:
        return _verdict(Relation.conflict, f"it ends or takes up again: {what}")
    return _verdict(Relation.may_update, f"perhaps it ends: {what}")


def _short(claim: Claim) -> bool:
    """About the length of one fact as a person states it (15 words, 30 Chinese characters)."""
    return len(re.findall(r"[A-Za-z0-9]+", claim.text)) + len(re.findall(r"[\u3400-\u9fff]", claim.text)) / 2 <= 15


def _things(words: frozenset[str]) -> frozenset[str]:
    """The words that name a thing, not a unit it is counted in or a number."""
    return frozenset(w for w in words if w not in UNITS and not w.isdigit() and not w.startswith("@"))


def _says(pattern: re.Pattern[str], claim: Claim) -> bool:
    return pattern.search(claim.text.lower() if claim.language == "en" else claim.text) is not None


def _states(old: Claim, values: frozenset[str]) -> bool:
    """Whether ``old`` says one of ``values`` (a kind of one counts: Americano for coffee)."""
    return lineage_overlap(old.values, values) or bool(values & old.content)


def _in_the_past(claim: Claim) -> bool:
    """Told of a time before now ("before that I taught...", "以前")."""
    return _says(PAST_FRAME, claim)


def _additive(claim: Claim) -> bool:
    """Said as one more, not instead ("also", "another", "还", "也"); "I cut out fish too" still ends."""
    if any(_says(cue, claim) for cue in (SWITCH, ENDING, ACQUIRE)):
        return False
    return _says(ADDITIVE, claim)


def _relate_change(new: Claim, old: Claim) -> MergeVerdict:
    same_slot = new.slot is not None and new.slot == old.slot
    stated = new.values | new.old_values | new.new_values
    if (
        new.negated
        and not old.negated
        and (same_slot or old.attribute is None)
        and lineage_overlap(stated, old.values or old.content)
    ):
        return _verdict(Relation.conflict, "the new statement denies this")
    if same_slot and new.single and not (new.values and new.values == old.values and not old.change):
        return _verdict(Relation.conflict, f"{new.attribute} changed")
    related = same_slot or (old.attribute is None and lineage_overlap(old.content, new.old_values))
    if related and not old.negated and states_old_value(old, new):
        if _says(SWITCH, new) or new.old_values:  # said outright ("switched", "换成"), not in passing
            return _verdict(Relation.conflict, "the new statement leaves this value behind")
        return _verdict(Relation.may_update, "perhaps the new statement leaves this value behind")
    if related and new.new_values and old.values and old.values <= new.new_values and not old.negated:
        return _verdict(Relation.same, "already says the new value")
    return _verdict(Relation.different, "the change is about something else")


def _states_new(old: Claim, change: Claim) -> bool:
    """The older statement already says what the change moves to."""
    return bool(old.values) and bool(change.new_values) and old.values <= change.new_values and not old.negated


def _relate_in_slot(new: Claim, old: Claim) -> MergeVerdict:
    if new.values == old.values:
        if new.negated != old.negated:
            return _verdict(Relation.conflict, "one statement denies the other")
        if _reversed_comparison(new, old):
            return _verdict(Relation.conflict, "the same words, compared the other way round")
        added, missing = new.content - old.content, old.content - new.content
        if added and not missing:
            return _verdict(Relation.supplement, "the new one adds detail", new.text)
        if not added:
            return _verdict(Relation.same, "the same fact")
        return _verdict(Relation.different, "the same thing, other details")
    if new.single:
        return _verdict(Relation.conflict, f"a new {new.attribute}")
    if new.negated != old.negated and lineage_overlap(new.values, old.values):
        return _verdict(Relation.conflict, "one statement denies the other")
    return _verdict(Relation.different, "another value of the same kind")


def _relate_by_words(new: Claim, old: Claim) -> MergeVerdict:
    if new.content == old.content:
        if not new.content and normalise(new.text) != normalise(old.text):
            # no word read in either ("a", "!" or "👍"): the lack of words is nothing in common
            return _verdict(Relation.different, "no words to compare, and not the same text")
        if new.negated != old.negated:
            return _verdict(Relation.conflict, "one statement negates the other")
        if _reversed_comparison(new, old):
            return _verdict(Relation.conflict, "the same words, compared the other way round")
        return _verdict(Relation.same, "the same words")
    if new.negated == old.negated and old.content and old.content < new.content:
        return _verdict(Relation.supplement, "the new one adds detail", new.text)
    if new.negated == old.negated and new.content and new.content < old.content:
        return _verdict(Relation.same, "nothing new")
    return _verdict(Relation.different, "different words carry different facts")


def about_someone_else(new: str, existing: str) -> bool:
    """Whether the two statements are about different people, clause by clause (a fact of Jess's is
    no update of the user's, however close its words; "I live in the dorms, my roommate snores" is
    the user's too)."""
    return all(
        same_person(n.subject, o.subject) == Sameness.different and not _called_by_name(n, o)
        for n in read_claims(new)
        for o in read_claims(existing)
    )
