"""Query rewrite: a pasted conversation or a long message becomes a short search query, by the
configured LLM. A failed or slow model leaves the query as it was."""

from __future__ import annotations

import json

from pydantic import BaseModel, Field

from engram.judge.chat import JsonChat

REWRITE_PROMPT = """You turn a user's message, or a conversation with them, into the search query
for their long-term memory that would find what the assistant should recall now: the people,
things, events and times it is about, in a few words, in the conversation's language. Do not
answer the user. Answer with JSON only, matching this schema: {schema}"""


class Rewrite(BaseModel):
    query: str = Field(min_length=1, max_length=400)


class QueryRewriter:
    def __init__(self, chat: JsonChat) -> None:
        self._chat = chat

    async def rewrite(self, query: str) -> str | None:
        """The search query the model made of ``query``, or None when it failed. Search asks only
        for a conversation (engram.domain.text.is_conversation)."""
        answer = await self._chat.ask(REWRITE_PROMPT, json.dumps({"message": query}, ensure_ascii=False), Rewrite)
        return answer.query.strip() if answer is not None else None
