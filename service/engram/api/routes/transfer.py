"""REST: a tenant's memories out as JSON Lines, and back in (or another store's export)."""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Annotated

from fastapi import APIRouter, Depends, Query, Request
from fastapi.responses import StreamingResponse

from engram.api.deps import ActingDep, EngramDep, known_query
from engram.api.errors import ERROR_RESPONSES
from engram.domain.transfer import Format
from engram.errors import InvalidInput
from engram.services.transfer import ImportSummary

router = APIRouter(
    prefix="/t/{tenant}/v1", tags=["export and import"], responses=ERROR_RESPONSES, dependencies=[Depends(known_query)]
)
NDJSON = "application/x-ndjson"
MAX_LINE = 16 * 1024 * 1024


@router.get("/export", response_class=StreamingResponse, responses={200: {"content": {NDJSON: {}}}})
async def export(ctx: ActingDep, engram: EngramDep) -> StreamingResponse:
    """Every memory (active, superseded, forgotten) with its history, one JSON object per line,
    streamed from one snapshot; with user_id, every memory of that user's own. The last line,
    ``{"end": {"memories": N}}``, marks a whole file."""
    return StreamingResponse(engram.transfer.export(ctx), media_type=NDJSON)


@router.post(
    "/import",
    openapi_extra={
        "requestBody": {
            "required": True,
            "description": "JSON Lines: one JSON object per line (a mem0 export may also be one JSON document)",
            "content": {NDJSON: {"schema": {"type": "array", "items": {"type": "object"}}}},
        }
    },
)
async def import_(
    request: Request,
    ctx: ActingDep,
    engram: EngramDep,
    format: Annotated[Format | None, Query(description="default: told from the first line")] = None,
) -> ImportSummary:
    """Import an engram export, a mem0 export or the MCP reference memory server's file, read as
    it arrives. Importing the same file again adds nothing. Memories keep their users (a mem0
    record's user_id too); with user_id, every memory imported is that user's."""
    return await engram.transfer.import_lines(ctx, _lines(request.stream()), format)


async def _lines(chunks: AsyncIterator[bytes]) -> AsyncIterator[str]:
    """The body's lines as they arrive, decoded as UTF-8; a line longer than MAX_LINE is refused
    (a memory's line is far shorter), so no body is held whole."""
    rest, number = b"", 0
    async for chunk in chunks:
        rest += chunk
        *whole, rest = rest.split(b"\n")
        for line in whole:
            number += 1
            yield _decoded(line, number)
        if len(rest) > MAX_LINE:
            raise InvalidInput(f"line {number + 1} is longer than {MAX_LINE} bytes", field=f"line {number + 1}")
    if rest:
        yield _decoded(rest, number + 1)


def _decoded(line: bytes, number: int) -> str:
    try:
        return line.decode("utf-8")
    except UnicodeDecodeError:
        raise InvalidInput(f"line {number}: not UTF-8", field=f"line {number}") from None
