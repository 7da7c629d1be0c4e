"""The LLM path of `engram eval --lifecycle`, against a scripted LLM that answers from the labels.

A local OpenAI-compatible server answers each "how do these two statements relate" question from
the labelled case being written (same fact -> same, a detail -> supplement, a stale statement met
by a later current one -> conflict, else different), reached through the real litellm client.
It measures what engram does with right answers: whether every memory a change replaces is put
in front of the model (candidate selection), and whether the verdicts are applied so that the
final active set is right. It says nothing of a real model's quality.

    python -m benchmarks.lifecycle_llm [--set lifecycle|changes|keep-both] [--split heldout|calibration|all]
"""

from __future__ import annotations

import argparse
import json
import threading
import time
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import uvicorn
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse
from starlette.routing import Route

from engram.cli.common import with_engram
from engram.domain.models import NewMemory
from engram.domain.storing import as_stored
from engram.evaluation import lifecycle
from engram.judge.llm import RELATE_MANY_PROMPT, RELATE_PROMPT
from engram.runtime import Engram
from engram.settings import LLMSettings, Settings
from engram.store.embedded import _free_port

ROOT = Path(__file__).resolve().parents[1]


class Oracle:
    """Answers relate questions from the labels of the case being written."""

    def __init__(self) -> None:
        self.case: lifecycle.Case | None = None
        self.asked = 0

    def relation(self, existing: str, new: str) -> dict[str, Any]:
        case = self.case
        assert case is not None
        # engram stores a fact as the user's words in the third person, its relative dates as dates
        # ("I moved here last month" -> "The user moved here in November 2026"): both forms count.
        now = datetime.now(UTC)
        index = {text: i for i, text in enumerate(case.writes)}
        index |= {as_stored(NewMemory(content=text, now=now)).content: i for i, text in enumerate(case.writes)}
        old, now = index.get(existing), index.get(new)
        group = {i: g for g, members in enumerate(case.current) for i in members}
        if old is None or now is None:
            return {"relation": "different", "reason": "not a statement of this case"}
        if group.get(old) is not None and group.get(old) == group.get(now):
            if case.category == "detail" and now > old:
                return {"relation": "supplement", "merged_content": new, "reason": "labelled: a detail"}
            return {"relation": "same", "reason": "labelled: the same fact"}
        if old in case.stale and now > old and now not in case.stale:
            return {"relation": "conflict", "reason": "labelled: replaced"}
        return {"relation": "different", "reason": "labelled: another fact"}

    async def chat(self, request: Request) -> JSONResponse:
        body = await request.json()
        system, user = body["messages"][0]["content"], body["messages"][1]["content"]
        self.asked += 1
        asked = json.loads(user)
        if system.startswith(RELATE_MANY_PROMPT.split("{")[0][:60]):
            relations = [{"index": e["index"], **self.relation(e["memory"], asked["new"])} for e in asked["existing"]]
            answer: dict[str, Any] = {"relations": relations}
        elif system.startswith(RELATE_PROMPT.split("{")[0][:60]):
            answer = self.relation(asked["existing"], asked["new"])
        else:  # not part of this measure: let engram fall back to its rules
            return JSONResponse({"error": {"message": "not scripted"}}, status_code=503)
        message = {"role": "assistant", "content": json.dumps(answer, ensure_ascii=False)}
        return JSONResponse(
            {
                "id": f"oracle-{self.asked}",
                "object": "chat.completion",
                "created": int(time.time()),
                "model": "oracle",
                "choices": [{"index": 0, "finish_reason": "stop", "message": message}],
                "usage": {"prompt_tokens": 1, "completion_tokens": 1, "total_tokens": 2},
            }
        )


def serve(oracle: Oracle) -> tuple[uvicorn.Server, int]:
    port = _free_port()
    app = Starlette(routes=[Route("/v1/chat/completions", oracle.chat, methods=["POST"])])
    server = uvicorn.Server(uvicorn.Config(app, host="127.0.0.1", port=port, log_level="warning"))
    threading.Thread(target=server.run, daemon=True).start()
    while not server.started:
        time.sleep(0.02)
    return server, port


def run(labelled: str, split: str, own: Path) -> str:
    """On the database `engram eval` uses (ENGRAM_DATABASE_URL, or the embedded one under .state)."""
    oracle = Oracle()
    server, port = serve(oracle)
    llm = LLMSettings(model="openai/oracle", api_base=f"http://127.0.0.1:{port}/v1", api_key="oracle", retries=0)
    cases = lifecycle.select(lifecycle.load_set(own, labelled), split)

    async def work(engram: Engram) -> list[lifecycle.Outcome]:
        return await lifecycle.evaluate_cases(engram, cases, before_case=lambda c: setattr(oracle, "case", c))

    try:
        outcomes = with_engram(Settings(llm=llm), work)
    finally:
        server.should_exit = True
    title = f"{labelled}, {split} split, LLM judge (scripted from the labels; {oracle.asked} questions)"
    return lifecycle.as_markdown(outcomes, title)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--set", dest="labelled", default="lifecycle", choices=list(lifecycle.SETS))
    parser.add_argument("--split", default="heldout", choices=lifecycle.SPLITS)
    parser.add_argument("--own-data", type=Path, default=ROOT / "tests" / "data")
    args = parser.parse_args()
    print(run(args.labelled, args.split, args.own_data))


if __name__ == "__main__":
    main()
