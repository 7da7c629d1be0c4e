"""An outage of a dependency is one warning when it begins and one line when it ends, however many
calls meet it: the embedding API and the LLM here (the database and Redis, through the running
service, in tests/integration/test_outages.py)."""

import logging
import threading
from types import SimpleNamespace

import pytest
from mcp.server.mcpserver.exceptions import ToolError

from engram import scheduler
from engram.domain.judgement import MergeVerdict
from engram.embedding import api as embedding_api
from engram.errors import Unavailable
from engram.judge import chat
from engram.mcp.tools import tool_errors
from engram.observability.outages import Outage
from engram.settings import LLMSettings


class FakeLiteLLM:
    """litellm as engram calls it, up or down at the test's word."""

    def __init__(self) -> None:
        self.up = True

    def _answer(self) -> None:
        if not self.up:
            raise ConnectionError("connection refused")

    def embedding(self, **_: object) -> SimpleNamespace:
        self._answer()
        return SimpleNamespace(data=[{"index": 0, "embedding": [0.6, 0.8]}])

    async def acompletion(self, **_: object) -> SimpleNamespace:
        self._answer()
        message = SimpleNamespace(content='{"relation": "same", "reason": "r"}')
        return SimpleNamespace(choices=[SimpleNamespace(message=message)])


@pytest.fixture
def litellm(monkeypatch) -> FakeLiteLLM:
    fake = FakeLiteLLM()
    monkeypatch.setattr(embedding_api, "offline_litellm", lambda: fake)
    monkeypatch.setattr(chat, "offline_litellm", lambda: fake)
    return fake


def lines(caplog, level: int) -> list[str]:
    return [r.getMessage() for r in caplog.records if r.levelno == level]


def test_thirty_calls_to_an_embedding_api_out_of_reach_log_one_warning_then_one_recovery(litellm, caplog):
    caplog.set_level(logging.INFO, logger="engram.embedding.api")
    embedder = embedding_api.LiteLLMEmbedder("litellm:openai/embed", None, None)
    litellm.up = False
    for _ in range(30):
        with pytest.raises(Unavailable):  # each call is still a 503 to its caller
            embedder._call(["the user likes tea"])
    assert lines(caplog, logging.WARNING) == [
        "embedding API openai/embed unreachable (ConnectionError: connection refused); "
        "writes and searches answer 503 until it is back"
    ]
    litellm.up = True
    for _ in range(5):
        embedder._call(["the user likes tea"])
    [back] = lines(caplog, logging.INFO)
    assert back.startswith("embedding API openai/embed is back after")


async def test_thirty_questions_to_an_llm_out_of_reach_log_one_warning_then_one_recovery(litellm, caplog):
    caplog.set_level(logging.INFO, logger="engram.judge.chat")
    settings = LLMSettings(model="openai/judge", api_base="http://127.0.0.1:9/v1")
    judge, rewriter = chat.JsonChat(settings), chat.JsonChat(settings)  # two askers of one model
    litellm.up = False
    for asker in (judge, rewriter) * 15:
        assert await asker.ask("{schema}", "same?", MergeVerdict) is None  # the caller falls back
    [warning] = lines(caplog, logging.WARNING)
    assert warning.startswith("LLM openai/judge unreachable (ConnectionError: connection refused)")
    litellm.up = True
    for asker in (judge, rewriter) * 3:
        assert await asker.ask("{schema}", "same?", MergeVerdict) is not None
    [back] = lines(caplog, logging.INFO)
    assert back.startswith("LLM openai/judge is back after")


def test_an_outage_met_from_many_threads_at_once_is_logged_once(caplog):
    caplog.set_level(logging.INFO, logger="test.outage")
    outage = Outage(logging.getLogger("test.outage"), "thing", "meanwhile nothing")
    barrier = threading.Barrier(8)

    def meet() -> None:
        barrier.wait()
        for _ in range(100):
            outage.began(OSError("down"))

    threads = [threading.Thread(target=meet) for _ in range(8)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert outage.ongoing and lines(caplog, logging.WARNING) == ["thing unreachable (OSError: down); meanwhile nothing"]
    outage.ended()
    outage.ended()
    assert not outage.ongoing and len(lines(caplog, logging.INFO)) == 1
    outage.began(OSError("down again"))  # the next outage is told again
    assert len(lines(caplog, logging.WARNING)) == 2


def test_an_mcp_call_that_meets_the_database_out_of_reach_is_the_outage_and_a_tool_error(caplog):
    caplog.set_level(logging.INFO, logger="test.database")
    database = Outage(logging.getLogger("test.database"), "database", "answering 503 until it is back")
    for _ in range(30):
        with (
            pytest.raises(ToolError, match="unavailable: the database"),
            tool_errors("search_memory", lambda: database),
        ):
            raise ConnectionRefusedError("connection refused")
    assert database.ongoing and len(lines(caplog, logging.WARNING)) == 1


async def test_a_scheduled_run_that_meets_the_database_out_of_reach_logs_the_outage_not_tracebacks(caplog):
    caplog.set_level(logging.INFO)
    database = Outage(logging.getLogger("test.database"), "database", "answering 503 until it is back")

    async def resolve(name: str) -> None:
        raise ConnectionRefusedError("connection refused")

    async def listed() -> list[SimpleNamespace]:
        return [SimpleNamespace(name=f"t{i}") for i in range(30)]

    engram = SimpleNamespace(
        settings=SimpleNamespace(tenant=None),
        tenants=SimpleNamespace(list=listed, resolve=resolve),
        database=database,
    )
    assert await scheduler.run_once(engram) == []  # type: ignore[arg-type]
    assert len([r for r in caplog.records if r.levelno >= logging.WARNING]) == 1
    assert not [r for r in caplog.records if r.exc_info], "no traceback per tenant for an outage"
