"""A local OpenAI-compatible chat server that answers from a script: the stand-in for an LLM API.

Tests queue answers (a JSON object, raw text, a delay, an HTTP error); engram reaches it through
the real litellm client over real HTTP.
"""

from __future__ import annotations

import asyncio
import json
import threading
import time
from collections import deque
from dataclasses import dataclass, field
from typing import Any

import uvicorn
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse
from starlette.routing import Route


@dataclass
class Answer:
    content: str | None = None
    delay: float = 0.0
    status: int = 200


@dataclass
class ScriptedLLM:
    answers: deque[Answer] = field(default_factory=deque)
    requests: list[dict[str, Any]] = field(default_factory=list)
    # Cleared: every request waits (the model "thinks") until it is set again.
    gate: threading.Event = field(default_factory=threading.Event)

    def __post_init__(self) -> None:
        self.gate.set()

    def reply_json(self, obj: Any, delay: float = 0.0) -> None:
        self.answers.append(Answer(content=json.dumps(obj, ensure_ascii=False), delay=delay))

    def reply_text(self, text: str) -> None:
        self.answers.append(Answer(content=text))

    def fail(self, status: int = 500) -> None:
        self.answers.append(Answer(status=status))

    def stall(self, seconds: float) -> None:
        self.answers.append(Answer(content="{}", delay=seconds))

    async def _chat(self, request: Request) -> JSONResponse:
        self.requests.append(await request.json())
        while not self.gate.is_set():
            await asyncio.sleep(0.01)
        answer = self.answers.popleft() if self.answers else Answer(status=503)
        if answer.delay:
            await asyncio.sleep(answer.delay)
        if answer.status != 200:
            return JSONResponse({"error": {"message": "scripted failure", "type": "server_error"}}, answer.status)
        return JSONResponse(
            {
                "id": f"chatcmpl-{len(self.requests)}",
                "object": "chat.completion",
                "created": int(time.time()),
                "model": "scripted",
                "choices": [
                    {"index": 0, "finish_reason": "stop", "message": {"role": "assistant", "content": answer.content}}
                ],
                "usage": {"prompt_tokens": 1, "completion_tokens": 1, "total_tokens": 2},
            }
        )

    def app(self) -> Starlette:
        return Starlette(routes=[Route("/v1/chat/completions", self._chat, methods=["POST"])])


class LLMServer:
    def __init__(self, port: int) -> None:
        self.script = ScriptedLLM()
        self.port = port
        self.server = uvicorn.Server(
            uvicorn.Config(self.script.app(), host="127.0.0.1", port=port, log_level="warning")
        )
        self.thread = threading.Thread(target=self.server.run, daemon=True)

    @property
    def api_base(self) -> str:
        return f"http://127.0.0.1:{self.port}/v1"

    def __enter__(self) -> LLMServer:
        self.thread.start()
        while not self.server.started:
            time.sleep(0.02)
        return self

    def __exit__(self, *exc: object) -> None:
        self.server.should_exit = True
        self.thread.join(timeout=10)
