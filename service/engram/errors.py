"""One error hierarchy, mapped once to HTTP (api/errors.py), to MCP ToolError and to CLI exit codes.

Every failure a caller sees is ``{"error": {"code", "message", "field"?, "index"?}}``: ``field``
names the input at fault ("items[3].content"), ``index`` the item of a batch.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any


class EngramError(Exception):
    """Base of every expected failure; the message is safe to show to a caller."""

    http_status = 500
    code = "error"

    def __init__(self, message: str, *, field: str | None = None, index: int | None = None) -> None:
        super().__init__(message)
        self.field = field
        self.index = index

    def body(self) -> dict[str, Any]:
        return error_body(self.code, str(self), self.field, self.index)


class InvalidInput(EngramError):
    http_status = 422
    code = "invalid_input"


class NotFound(EngramError):
    http_status = 404
    code = "not_found"


class Conflict(EngramError):
    http_status = 409
    code = "conflict"


class Unauthorized(EngramError):
    http_status = 401
    code = "unauthorized"


class Forbidden(EngramError):
    http_status = 403
    code = "forbidden"


class Misdirected(EngramError):
    """The request names a host this service does not answer for (DNS rebinding protection)."""

    http_status = 421
    code = "misdirected"


class PayloadTooLarge(EngramError):
    http_status = 413
    code = "too_large"


class TooManyRequests(EngramError):
    """The tenant sent more than its share of the intake: retry after ``retry_after_seconds``."""

    http_status = 429
    code = "rate_limited"

    def __init__(self, message: str, *, retry_after_seconds: int) -> None:
        super().__init__(message)
        self.retry_after_seconds = retry_after_seconds


class Unavailable(EngramError):
    """A dependency (the database) cannot be reached: try again shortly."""

    http_status = 503
    code = "unavailable"
    retry_after_seconds = 5


class ConfigurationError(EngramError):
    """The deployment is wrong (wrong environment, a model it cannot load): refuse to start, or
    answer 503 for what it cannot serve (500 is kept for bugs)."""

    http_status = 503
    code = "configuration"


def error_body(code: str, message: str, field: str | None = None, index: int | None = None) -> dict[str, Any]:
    error: dict[str, Any] = {"code": code, "message": message}
    if field is not None:
        error["field"] = field
    if index is not None:
        error["index"] = index
    return {"error": error}


def field_of(location: tuple[Any, ...] | list[Any]) -> tuple[str, int | None]:
    """("body", "items", 3, "content") -> ("items[3].content", 3): the input a caller must fix."""
    sources = ("body", "query", "path", "header", "cookie")
    parts = [str(p) for p in (location[1:] if location and location[0] in sources else location)]
    field, index = "", None
    for part in parts:
        if part.isdigit():
            field += f"[{part}]"
            index = int(part) if index is None else index
        else:
            field += ("." if field else "") + part
    return field or "body", index


def invalid_input(problems: Sequence[Mapping[str, Any]]) -> InvalidInput:
    """Validation problems (pydantic's or FastAPI's) as one InvalidInput: the first names the field;
    the message never echoes the input (which may not even be encodable: a lone surrogate)."""
    field, index = field_of(tuple(problems[0].get("loc", ()))) if problems else ("body", None)
    message = "; ".join(f"{field_of(tuple(p.get('loc', ())))[0]}: {p.get('msg', 'invalid')}" for p in problems[:5])
    return InvalidInput(message or "invalid input", field=field, index=index)
