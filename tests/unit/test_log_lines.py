"""Log lines: readable at a terminal, JSON lines for a collector, either on request."""

import io
import json
import logging

import pytest

from engram.observability import logs


class Terminal(io.StringIO):
    def isatty(self) -> bool:
        return True


@pytest.fixture
def restore_logging():
    root = logging.getLogger()
    handlers, level = root.handlers[:], root.level
    yield
    root.handlers[:], root.level = handlers, level


def logged(monkeypatch, stream: io.StringIO, fmt: str) -> str:
    monkeypatch.setattr(logs.sys, "stderr", stream)
    logs.configure("info", fmt)
    logging.getLogger("engram.test").info("request", extra={"method": "GET", "status": 200})
    return stream.getvalue()


def test_a_terminal_gets_readable_lines_with_the_fields(monkeypatch, restore_logging):
    line = logged(monkeypatch, Terminal(), "auto")
    assert not line.startswith("{")
    assert "INFO" in line and "engram.test: request" in line and "method=GET status=200" in line


def test_a_pipe_gets_json_lines(monkeypatch, restore_logging):
    entry = json.loads(logged(monkeypatch, io.StringIO(), "auto"))
    assert entry["message"] == "request" and entry["status"] == 200 and entry["level"] == "info"


@pytest.mark.parametrize(("stream", "fmt", "is_json"), [(Terminal, "json", True), (io.StringIO, "plain", False)])
def test_a_format_asked_for_wins_over_the_guess(monkeypatch, restore_logging, stream, fmt, is_json):
    line = logged(monkeypatch, stream(), fmt)
    assert line.startswith("{") is is_json
