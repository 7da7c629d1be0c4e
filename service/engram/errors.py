"""One error hierarchy, mapped once to HTTP (api/errors.py), to MCP ToolError and to CLI exit codes."""


class EngramError(Exception):
    """Base of every expected failure; the message is safe to show to a caller."""

    http_status = 500


class InvalidInput(EngramError):
    http_status = 422


class NotFound(EngramError):
    http_status = 404


class Conflict(EngramError):
    http_status = 409


class Unauthorized(EngramError):
    http_status = 401


class Forbidden(EngramError):
    http_status = 403


class ConfigurationError(EngramError):
    """The deployment is wrong (model mismatch, wrong environment): refuse to start."""

    http_status = 500
