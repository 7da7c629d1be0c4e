"""The LLM judge: any model litellm reaches, JSON answers validated by schema, rules as fallback.

Every call has a timeout and retries; a timeout, an API error or an answer that does not parse
or validate is logged and the rule judge's answer is used instead, so a write never fails
because a model did.
"""

from __future__ import annotations

import json

from pydantic import BaseModel, Field

from engram.domain.judgement import ForgetVerdict, MergeVerdict, Relation, Turn, TurnJudgement
from engram.domain.models import Memory
from engram.judge.base import Judge
from engram.judge.chat import JsonChat
from engram.judge.rules import RuleJudge

TURN_PROMPT = """You decide what a long-term memory should keep from one conversation turn.
Keep durable facts about the user: preferences, facts, events, tasks. Skip greetings, questions,
passing states ("I'm tired right now"), repeats of the assistant, and anything the user asks not
to be remembered. Split into atomic facts, one idea each, in the user's language.
Answer with JSON only, matching this schema: {schema}"""

RELATE_PROMPT = """Two memories about the same user. Decide how the NEW statement relates to the
EXISTING memory: "same" (same fact, other words), "supplement" (adds detail; give merged_content,
one memory holding both), "conflict" (contradicts or replaces it, e.g. a changed preference, a new
weight), "different" (distinct facts: another order number, another person, another event).
Answer with JSON only, matching this schema: {schema}"""

RELATE_MANY_PROMPT = """A NEW statement about the user, and EXISTING memories about the same user,
numbered. For each existing memory, decide how the NEW statement relates to it:
"same" (the same fact in other words or another language), "supplement" (the NEW one adds detail;
give merged_content, one memory holding both), "conflict" (the NEW statement makes it no longer
true: a changed value, preference, status, habit or plan; name every memory it makes stale),
"may_update" (the NEW statement perhaps makes it stale, but it cannot be told from what is said:
both are kept, and the older one is marked and ranked below), "different" (anything else: another
person's fact, another order or event, another thing of the same kind). A new number for the same
thing (a new weight, a new phone number) is a "conflict".
Answer with JSON only, one entry per existing memory, matching this schema: {schema}"""

FORGET_PROMPT = """A memory has not been used for a long time and its decay score is low.
Should it be forgotten? Keep it if it is still likely useful (identity, health, lasting
preferences, open tasks). Answer with JSON only: {{"forget": true|false, "reason": "..."}}"""

DERIVE_PROMPT = """These memories about one user are related. Write one higher-level memory that
captures what they say together (e.g. "likes americano" + "no sugar" + "coffee every morning" ->
"drinks black coffee every morning"), in their language, or null if they do not combine.
Answer with JSON only: {{"content": "..." | null}}"""


class IndexedVerdict(MergeVerdict):
    index: int = Field(description="the number of the existing memory")


class RelationsAnswer(BaseModel):
    relations: list[IndexedVerdict]


class DeriveAnswer(BaseModel):
    content: str | None = None


class LiteLLMJudge(Judge):
    name = "llm"
    wide_view = True
    remote = True

    def __init__(self, chat: JsonChat, fallback: RuleJudge) -> None:
        self._chat = chat
        self._fallback = fallback

    @property
    def fallbacks(self) -> int:
        """How often the rules had to answer instead."""
        return self._chat.failures

    async def judge_turn(self, turn: Turn) -> TurnJudgement:
        user = json.dumps({"user": turn.user, "assistant": turn.assistant}, ensure_ascii=False)
        answer = await self._chat.ask(TURN_PROMPT, user, TurnJudgement)
        if answer is None:
            return await self._fallback.judge_turn(turn)
        return answer if answer.should_write else TurnJudgement(should_write=False, reason=answer.reason)

    async def relate(self, new: str, existing: str, similarity: float) -> MergeVerdict:
        user = json.dumps({"existing": existing, "new": new}, ensure_ascii=False)
        answer = await self._chat.ask(RELATE_PROMPT, user, MergeVerdict)
        if answer is None or (answer.relation == Relation.supplement and not answer.merged_content):
            return await self._fallback.relate(new, existing, similarity)
        return answer

    async def relate_many(self, new: str, existing: list[tuple[str, float]]) -> list[MergeVerdict]:
        """One question for all of them; any memory the answer leaves out, or answers unusably, is
        decided by the rules."""
        if not existing:
            return []
        numbered = [{"index": i, "memory": text} for i, (text, _) in enumerate(existing, 1)]
        user = json.dumps({"new": new, "existing": numbered}, ensure_ascii=False)
        answer = await self._chat.ask(RELATE_MANY_PROMPT, user, RelationsAnswer)
        given = {v.index: v for v in answer.relations} if answer is not None else {}
        out = []
        for i, (text, similarity) in enumerate(existing, 1):
            verdict = given.get(i)
            if verdict is None or (verdict.relation == Relation.supplement and not verdict.merged_content):
                out.append(await self._fallback.relate(new, text, similarity))
            else:
                out.append(
                    MergeVerdict(
                        relation=verdict.relation, merged_content=verdict.merged_content, reason=verdict.reason
                    )
                )
        return out

    async def confirm_forget(self, memory: Memory, score: float) -> ForgetVerdict:
        user = json.dumps(
            {
                "memory": memory.content,
                "type": memory.type,
                "importance": memory.importance,
                "decay_score": round(score, 3),
            },
            ensure_ascii=False,
        )
        answer = await self._chat.ask(FORGET_PROMPT, user, ForgetVerdict)
        if answer is None:
            return await self._fallback.confirm_forget(memory, score)
        return ForgetVerdict(forget=answer.forget, reason=f"llm: {answer.reason}" if answer.reason else "llm")

    async def derive(self, memories: list[Memory]) -> str | None:
        user = json.dumps([m.content for m in memories], ensure_ascii=False)
        answer = await self._chat.ask(DERIVE_PROMPT, user, DeriveAnswer)
        return None if answer is None or not answer.content else answer.content.strip()
