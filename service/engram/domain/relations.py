"""How a new statement relates to a stored one, by rules (pure; the rule judge and the write path
use it, the LLM judge falls back to it).

Read as claims (domain/claims.py): numbers that differ, or another subject, are different facts;
a change retires what states the old value; within one slot the same value is the same fact
(with more detail: a supplement), a denial of it a conflict, a new value of a one-value slot a
conflict; outside any slot the value-bearing words decide, and words that differ are never the
same fact (so a new password or another person's degree is never touched away).
"""

from __future__ import annotations

import re

from engram.domain.claims import Claim, lineage_overlap, read_claim, states_old_value
from engram.domain.judgement import MergeVerdict, Relation

_COMPARATIVE = re.compile(r"\b(over|than|rather|instead of)\b|比|胜过|而不是", re.IGNORECASE)


def _verdict(relation: Relation, reason: str, merged: str | None = None) -> MergeVerdict:
    return MergeVerdict(relation=relation, reason=reason, merged_content=merged)


def announces_change(text: str) -> bool:
    return read_claim(text).change


def announces_change_outright(text: str) -> bool:
    claim = read_claim(text)
    return claim.strong_change and bool(claim.topics or claim.slot or claim.old_values)


def _reversed_comparison(new: Claim, old: Claim) -> bool:
    """ "email over phone" then "phone over email": the same words, compared the other way round."""
    if not (_COMPARATIVE.search(new.text) and _COMPARATIVE.search(old.text)):
        return False
    order = [w for w in re.findall(r"\w+", new.text.lower()) if w in new.content]
    before = [w for w in re.findall(r"\w+", old.text.lower()) if w in old.content]
    return set(order) == set(before) and order != before


def relate_claims(new: Claim, old: Claim) -> MergeVerdict:
    if new.future != old.future:  # a plan and a fact of today are two facts
        return _verdict(Relation.different, "a plan is not what is true today")
    if new.subject != old.subject:
        return _verdict(Relation.different, f"about {new.subject}, not {old.subject}")
    if new.dates and old.dates and new.dates != old.dates:
        return _verdict(Relation.different, "it happened at another time")
    if new.strong_change and new.topics & old.topics and not _states_new(old, new):
        return _verdict(Relation.conflict, f"a change of {', '.join(sorted(new.topics & old.topics))}")
    if new.numbers != old.numbers:
        one_value = new.slot is not None and new.slot == old.slot and new.single and not new.future
        if one_value and new.numbers and old.numbers:  # a number replaced by another: phone, weight
            return _verdict(Relation.conflict, f"a new {new.attribute} (numbers differ)")
        return _verdict(Relation.different, "numbers or ids differ")
    if new.subject.startswith("someone"):  # "he", "她": perhaps not the same person twice
        same = new.content == old.content and new.negated == old.negated
        return _verdict(Relation.same, "the same words") if same else _verdict(Relation.different, "about someone")
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
    return _relate_by_words(new, old)


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
        return _verdict(Relation.conflict, "the new statement leaves this value behind")
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


def relate_statements(new: str, existing: str) -> MergeVerdict:
    return relate_claims(read_claim(new), read_claim(existing))
