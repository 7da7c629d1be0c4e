"""The SDK's MCP server, in two things as engram's clients need it.

A tool call's arguments are checked as REST checks a body: a problem comes back as
``invalid_input: <field>: <what is wrong> (field <field>)``, never as pydantic's own text (which
names the SDK's generated class and links to pydantic's site), and an argument the tool does not
take is named, with the one that was probably meant, rather than ignored.

A resource read through a template (it needs the request's tenant, which only a template's
handler gets) can also be listed: a client's attach menu shows resources, not templates."""

from __future__ import annotations

import difflib
from typing import Any

from mcp.server import MCPServer
from mcp.server.mcpserver import Context
from mcp.server.mcpserver.exceptions import ToolError, UnexpectedToolError
from mcp.types import CallToolResult, InputRequiredResult
from mcp.types import Resource as MCPResource
from pydantic import ValidationError

from engram.errors import EngramError, InvalidInput, invalid_input


def tool_error_text(exc: EngramError) -> str:
    return f"{exc.code}: {exc}" + (f" (field {exc.field})" if exc.field else "")


def unknown_arguments(given: set[str], known: set[str]) -> InvalidInput | None:
    unknown = sorted(given - known)
    if not unknown:
        return None
    said = []
    for name in unknown:
        # "id" for memory_id: one of a known name's words, else a near spelling ("contnet")
        close = [k for k in sorted(known) if name.lower() in k.split("_")] or difflib.get_close_matches(
            name, sorted(known), n=1, cutoff=0.6
        )
        said.append(f"{name!r}" + (f" (did you mean {close[0]}?)" if close else ""))
    takes = ", ".join(sorted(known))
    return InvalidInput(f"unknown argument {', '.join(said)}; this tool takes {takes}", field=unknown[0])


class EngramMCPServer(MCPServer[Any]):
    _arguments: dict[str, set[str]] | None = None
    listed: tuple[MCPResource, ...] = ()  # read through a template, listed as resources too

    async def list_resources(self) -> list[MCPResource]:
        return [*await super().list_resources(), *self.listed]

    async def call_tool(
        self, name: str, arguments: dict[str, Any], context: Context[Any, Any] | None = None
    ) -> CallToolResult | InputRequiredResult:
        known = (await self._known_arguments()).get(name)
        if known is not None and (problem := unknown_arguments(set(arguments), known)):
            raise ToolError(f"Error executing tool {name}: {tool_error_text(problem)}")
        try:
            return await super().call_tool(name, arguments, context)
        except ToolError as exc:
            cause = exc.__cause__
            if isinstance(exc, UnexpectedToolError) or not isinstance(cause, ValidationError):
                raise
            problem = invalid_input(cause.errors(include_url=False, include_input=False))
            raise ToolError(f"Error executing tool {name}: {tool_error_text(problem)}") from cause

    async def _known_arguments(self) -> dict[str, set[str]]:
        """Each tool's argument names, read once from the schemas it lists (tools are fixed at start)."""
        if self._arguments is None:
            self._arguments = {t.name: set(t.input_schema.get("properties", {})) for t in await self.list_tools()}
        return self._arguments
