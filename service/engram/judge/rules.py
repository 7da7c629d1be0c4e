"""The rule judge: no LLM, works offline, Chinese and English.

It keeps the statements of a user's turn (domain/utterance.py: sentences, and clauses that stand
alone, in the user's own words) that are about the user or the people of the user's life, and
types them by cue words (preference, event, task, fact); the write path stores them in the third
person. Limits (measured by `engram eval --lifecycle`): it reads only the user's words and does
not resolve pronouns. How two statements relate is decided by their claims
(domain/relations.py): what the rules cannot read stays two memories, perhaps marked, rather than
risk losing a fact.
"""

from __future__ import annotations

import re

from engram.domain.judgement import Fact, ForgetVerdict, MergeVerdict, Turn, TurnJudgement
from engram.domain.models import Layer, Memory, MemoryType
from engram.domain.relations import relate_statements
from engram.domain.subjects import names_someone
from engram.domain.utterance import statements
from engram.judge.base import Judge

_DO_NOT_REMEMBER = re.compile(
    r"don'?t (remember|save|store|keep)|do not (remember|save|store)|forget (this|that|it)|off the record|"
    r"不要记|别记|不用记|不要保存|别保存|忘掉这|忘了这",
    re.IGNORECASE,
)
_GREETING = re.compile(
    r"^(hi|hello|hey|thanks|thank you|ok|okay|sure|bye|good (morning|night|evening)|yes|no|great|cool|"
    r"你好|您好|谢谢|好的|好|嗯|再见|早上好|晚安|没问题|行|可以)[\s,.!！。~]*$",
    re.IGNORECASE,
)
_TRANSIENT = re.compile(
    r"\b(right now|at the moment|currently)\b.*\b(tired|hungry|sleepy|bored|busy|cold|hot)\b|"
    r"\b(tired|hungry|sleepy|bored)\b.*\b(right now|now|today|at the moment)\b|"
    r"(现在|此刻|今天|刚才|这会儿).{0,6}(累|饿|困|无聊|忙|冷|热)|(有点|好)(累|饿|困)",
    re.IGNORECASE,
)
_QUESTION = re.compile(
    r"[?？]\s*$|[吗呢]\s*[?？。]?\s*$|^(what|how|why|when|where|who|can you|could you|do you)\b", re.IGNORECASE
)
_PREFERENCE = re.compile(
    r"\b(like|likes|love|loves|prefer|prefers|hate|hates|dislike|favou?rite|enjoy|enjoys|switched to|"
    r"can'?t stand|rather|allergic)\b|喜欢|爱喝|爱吃|偏好|讨厌|不喜欢|更喜欢|习惯|最爱|换成|改喝|改成|过敏|不吃|不喝",
    re.IGNORECASE,
)
_TASK = re.compile(
    r"\b(remind me|need to|have to|must|todo|to-do|don'?t forget to|deadline|due)\b|"
    r"提醒|需要|要记得|记得要|记得|别忘了|待办|截止|必须|要交|得交|要去|要还|到期",
    re.IGNORECASE,
)
_EVENT = re.compile(
    r"\b(yesterday|last (week|month|year|night)|tomorrow|next (week|month|year)|on (monday|tuesday|wednesday|"
    r"thursday|friday|saturday|sunday)|went|visited|bought|met|attended|moved|started|finished|booked)\b|"
    r"昨天|前天|上周|上个月|明天|后天|下周|下个月|去了|买了|参加了|见了|搬到|开始|完成了|预订|最近",
    re.IGNORECASE,
)
_SELF = re.compile(r"\b(i|i'm|i've|my|me|we|our)\b|我", re.IGNORECASE)
_IMPORTANT = re.compile(r"allerg|medic|doctor|password|birthday|address|过敏|药|医生|生日|地址|密码", re.IGNORECASE)
_EXPLICIT = re.compile(r"\bremember\b|记住|记一下", re.IGNORECASE)
_HEDGE = re.compile(r"\b(maybe|perhaps|probably|might)\b|也许|可能|大概", re.IGNORECASE)
_SESSION_SCOPE = re.compile(r"\b(this (conversation|chat|session)|for now)\b|这次|本次|这个对话", re.IGNORECASE)


class RuleJudge(Judge):
    name = "rules"

    async def judge_turn(self, turn: Turn) -> TurnJudgement:
        text = turn.user.strip()
        if _DO_NOT_REMEMBER.search(text):
            return TurnJudgement(should_write=False, reason="the user asked not to remember this")
        facts = [fact for s in statements(text) if (fact := self._fact(s, turn)) is not None]
        if not facts:
            return TurnJudgement(should_write=False, reason="nothing durable: greeting, question or passing state")
        return TurnJudgement(should_write=True, facts=facts, reason=f"{len(facts)} statement(s) about the user")

    def _fact(self, sentence: str, turn: Turn) -> Fact | None:
        if len(sentence) < 2 or _GREETING.match(sentence) or _QUESTION.search(sentence):
            return None
        if _TRANSIENT.search(sentence):
            return None
        if _TASK.search(sentence):
            kind, importance = MemoryType.task, 0.7
        elif _PREFERENCE.search(sentence):
            kind, importance = MemoryType.preference, 0.6
        elif _EVENT.search(sentence):
            kind, importance = MemoryType.event, 0.5
        elif _SELF.search(sentence) or names_someone(sentence):  # the user, or the people of the user's life
            kind, importance = MemoryType.fact, 0.5
        else:
            return None
        if _IMPORTANT.search(sentence):
            importance += 0.25
        if _EXPLICIT.search(sentence):
            importance += 0.15
        if _HEDGE.search(sentence):
            importance -= 0.2
        layer = Layer.long_term
        if kind == MemoryType.task and turn.task_id:
            layer = Layer.task
        elif turn.session_id and _SESSION_SCOPE.search(sentence):
            layer = Layer.session
        return Fact(content=sentence, type=kind, importance=round(min(1.0, max(0.05, importance)), 2), layer=layer)

    async def relate(self, new: str, existing: str, similarity: float) -> MergeVerdict:
        return relate_statements(new, existing)

    async def confirm_forget(self, memory: Memory, score: float) -> ForgetVerdict:
        if memory.importance >= 0.8:
            return ForgetVerdict(forget=False, reason="rules: marked important (importance >= 0.8)")
        if memory.type == MemoryType.task:
            return ForgetVerdict(forget=False, reason="rules: a task is kept until its task is closed")
        return ForgetVerdict(forget=True, reason="rules: nothing marks it as still needed")

    async def derive(self, memories: list[Memory]) -> str | None:
        return None  # summarising needs a language model
