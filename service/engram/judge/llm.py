"""The LLM judge: any model litellm reaches, JSON answers validated by schema, rules as fallback.

Every call has a timeout and retries; a timeout, an API error or an answer that does not parse
or validate is logged and the rule judge's answer is used instead, so a write never fails
because a model did.
"""

from __future__ import annotations

import json
import logging
from typing import Any, TypeVar

from pydantic import BaseModel, ValidationError

from engram.domain.judgement import MergeVerdict, Relation, Turn, TurnJudgement
from engram.domain.lifecycle import may_be_same_fact
from engram.domain.models import Memory
from engram.judge.base import Judge
from engram.judge.rules import RuleJudge

log = logging.getLogger(__name__)
T = TypeVar("T", bound=BaseModel)

TURN_PROMPT = """You decide what a long-term memory should keep from one conversation turn.
Keep durable facts about the user: preferences, facts, events, tasks. Skip greetings, questions,
passing states ("I'm tired right now"), repeats of the assistant, and anything the user asks not
to be remembered. Split into atomic facts, one idea each, in the user's language.
Answer with JSON only, matching this schema: {schema}"""

RELATE_PROMPT = """Two memories about the same user. Decide how the NEW statement relates to the
EXISTING memory: "same" (same fact, other words), "supplement" (adds detail; give merged_content,
one memory holding both), "conflict" (contradicts or replaces it, e.g. a changed preference),
"different" (distinct facts). Numbers, ids and dates that differ always mean "different".
Answer with JSON only, matching this schema: {schema}"""

FORGET_PROMPT = """A memory has not been used for a long time and its decay score is low.
Should it be forgotten? Keep it if it is still likely useful (identity, health, lasting
preferences, open tasks). Answer with JSON only: {{"forget": true|false, "reason": "..."}}"""

DERIVE_PROMPT = """These memories about one user are related. Write one higher-level memory that
captures what they say together (e.g. "likes americano" + "no sugar" + "coffee every morning" ->
"drinks black coffee every morning"), in their language, or null if they do not combine.
Answer with JSON only: {{"content": "..." | null}}"""


class ForgetAnswer(BaseModel):
    forget: bool
    reason: str = ""


class DeriveAnswer(BaseModel):
    content: str | None = None


class LiteLLMJudge(Judge):
    name = "llm"

    def __init__(
        self,
        model: str,
        api_base: str | None,
        api_key: str | None,
        timeout: float,
        retries: int,
        fallback: RuleJudge,
    ) -> None:
        self._model = model
        self._api_base = api_base
        self._api_key = api_key
        self._timeout = timeout
        self._retries = retries
        self._fallback = fallback
        self.fallbacks = 0  # how often the rules had to answer instead

    async def judge_turn(self, turn: Turn) -> TurnJudgement:
        user = json.dumps({"user": turn.user, "assistant": turn.assistant}, ensure_ascii=False)
        answer = await self._ask(TURN_PROMPT, user, TurnJudgement)
        if answer is None:
            return await self._fallback.judge_turn(turn)
        return answer if answer.should_write else TurnJudgement(should_write=False, reason=answer.reason)

    async def relate(self, new: str, existing: str, similarity: float) -> MergeVerdict:
        if not may_be_same_fact(new, existing):  # never left to the model
            return MergeVerdict(relation=Relation.different, reason="numbers, ids or dates differ")
        user = json.dumps({"existing": existing, "new": new}, ensure_ascii=False)
        answer = await self._ask(RELATE_PROMPT, user, MergeVerdict)
        if answer is None or (answer.relation == Relation.supplement and not answer.merged_content):
            return await self._fallback.relate(new, existing, similarity)
        return answer

    async def confirm_forget(self, memory: Memory, score: float) -> bool:
        user = json.dumps(
            {
                "memory": memory.content,
                "type": memory.type,
                "importance": memory.importance,
                "decay_score": round(score, 3),
            },
            ensure_ascii=False,
        )
        answer = await self._ask(FORGET_PROMPT, user, ForgetAnswer)
        return await self._fallback.confirm_forget(memory, score) if answer is None else answer.forget

    async def derive(self, memories: list[Memory]) -> str | None:
        user = json.dumps([m.content for m in memories], ensure_ascii=False)
        answer = await self._ask(DERIVE_PROMPT, user, DeriveAnswer)
        return None if answer is None or not answer.content else answer.content.strip()

    async def _ask(self, system: str, user: str, schema: type[T]) -> T | None:
        import litellm  # imported lazily: it takes seconds

        prompt = system.format(schema=json.dumps(schema.model_json_schema()))
        try:
            response = await litellm.acompletion(
                model=self._model,
                messages=[{"role": "system", "content": prompt}, {"role": "user", "content": user}],
                api_base=self._api_base,
                api_key=self._api_key,
                timeout=self._timeout,
                num_retries=self._retries,
                temperature=0,
                response_format={"type": "json_object"},
            )
            return schema.model_validate(_json_object(response.choices[0].message.content or ""))
        except (ValidationError, ValueError) as exc:
            log.warning("LLM judge answer unusable (%s); using the rules", exc)
        except Exception as exc:  # litellm raises provider-specific types (timeouts, HTTP errors)
            log.warning("LLM judge call failed (%s: %s); using the rules", type(exc).__name__, exc)
        self.fallbacks += 1
        return None


def _json_object(text: str) -> Any:
    """The JSON object in a reply, tolerating a ```json fence around it."""
    text = text.strip()
    if text.startswith("```"):
        text = text.strip("`").removeprefix("json").strip()
    return json.loads(text)
