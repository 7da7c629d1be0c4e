"""Logs: one JSON object per line for a collector, or readable lines for a person at a terminal;
each with the request id it belongs to."""

from __future__ import annotations

import json
import logging
import sys
import uuid
from contextvars import ContextVar
from datetime import UTC, datetime

request_id: ContextVar[str | None] = ContextVar("engram_request_id", default=None)

# LogRecord attributes that are not "extra" fields of a log call (and uvicorn's coloured copy of its message).
_STANDARD = set(vars(logging.makeLogRecord({}))) | {"message", "asctime", "taskName", "color_message"}


def new_request_id(given: str | None = None) -> str:
    """The caller's X-Request-ID when it is sane, else a new one."""
    if given and len(given) <= 100 and given.isprintable():
        return given
    return uuid.uuid4().hex[:16]


class JsonFormatter(logging.Formatter):
    def format(self, record: logging.LogRecord) -> str:
        entry = {
            "time": datetime.fromtimestamp(record.created, UTC).isoformat(timespec="milliseconds"),
            "level": record.levelname.lower(),
            "logger": record.name,
            "message": record.getMessage(),
        }
        if (rid := request_id.get()) is not None:
            entry["request_id"] = rid
        entry |= {k: v for k, v in vars(record).items() if k not in _STANDARD}
        if record.exc_info:
            entry["exception"] = self.formatException(record.exc_info)
        return json.dumps(entry, ensure_ascii=False, default=str)


class PlainFormatter(logging.Formatter):
    """A line a person reads: time, level, logger, message, then the extra fields as key=value."""

    def format(self, record: logging.LogRecord) -> str:
        when = datetime.fromtimestamp(record.created).strftime("%H:%M:%S")
        line = f"{when} {record.levelname:<7} {record.name}: {record.getMessage()}"
        extra = {k: v for k, v in vars(record).items() if k not in _STANDARD}
        if (rid := request_id.get()) is not None:
            extra = {"request_id": rid} | extra
        if extra:
            line += "  " + " ".join(f"{k}={v}" for k, v in extra.items())
        if record.exc_info:
            line += "\n" + self.formatException(record.exc_info)
        return line


def configure(level: str = "info", fmt: str = "auto") -> None:
    """Logging of the process on stderr: ``json`` lines, ``plain`` ones, or (``auto``) plain at a
    terminal and JSON when stderr goes elsewhere (a pipe, a file, a container's log)."""
    if fmt == "auto":
        fmt = "plain" if sys.stderr.isatty() else "json"
    handler = logging.StreamHandler(sys.stderr)
    handler.setFormatter(JsonFormatter() if fmt == "json" else PlainFormatter())
    root = logging.getLogger()
    root.handlers[:] = [handler]
    root.setLevel(level.upper())
