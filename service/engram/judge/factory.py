"""Build the configured judge."""

from __future__ import annotations

from engram.judge.base import Judge
from engram.judge.chat import JsonChat
from engram.judge.llm import LiteLLMJudge
from engram.judge.rewrite import QueryRewriter
from engram.judge.rules import RuleJudge
from engram.settings import Settings


def build_judge(settings: Settings) -> Judge:
    rules = RuleJudge()
    if not settings.llm.model:
        return rules
    return LiteLLMJudge(JsonChat(settings.llm), fallback=rules)


def build_rewriter(settings: Settings) -> QueryRewriter | None:
    """Query rewrite needs a model: without one, queries are searched as they are."""
    if not settings.llm.model or not settings.retrieval.rewrite:
        return None
    return QueryRewriter(JsonChat(settings.llm))
