"""Build the configured judge."""

from __future__ import annotations

from engram.judge.base import Judge
from engram.judge.llm import LiteLLMJudge
from engram.judge.rules import RuleJudge
from engram.settings import Settings


def build_judge(settings: Settings, touch_threshold: float) -> Judge:
    rules = RuleJudge(touch_threshold)
    llm = settings.llm
    if not llm.model:
        return rules
    key = llm.api_key.get_secret_value() if llm.api_key else None
    return LiteLLMJudge(llm.model, llm.api_base, key, llm.timeout_seconds, llm.retries, fallback=rules)
