"""Judges decide what to remember, how memories relate, and what may be forgotten.

Rules (offline, zh and en) are the default; an LLM through litellm is the upgrade, and falls
back to the rules whenever it fails.
"""

from engram.judge.base import Judge
from engram.judge.factory import build_judge, build_rewriter
from engram.judge.rewrite import QueryRewriter

__all__ = ["Judge", "QueryRewriter", "build_judge", "build_rewriter"]
