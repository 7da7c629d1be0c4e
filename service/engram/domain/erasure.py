"""What an erasure hands back: what it removed, counted per table, and the check made after it."""

from __future__ import annotations

from datetime import datetime
from typing import Any
from uuid import UUID

from pydantic import BaseModel, Field


class ErasureReceipt(BaseModel):
    """What an erasure (a user, a selection of memories, a whole tenant) removed, and the check
    made after it that nothing of it remains."""

    tenant: str
    user_id: str | None = Field(None, description="the user erased, for a user's erasure")
    selection: dict[str, Any] | None = Field(None, description="the filter or query chosen, for a selection's")
    memory_ids: list[UUID] | None = Field(None, description="the memories a selection's erasure chose")
    erased_at: datetime
    removed: dict[str, int] = Field(
        description="per table: memories, memory_history, tombstones (ids and hashes kept so an import never "
        "brings them back), api_keys revoked, query_cache entries; for a tenant every table of its schema"
    )
    remaining: dict[str, int] = Field(description="found after the erasure: all zero when it is complete")
    complete: bool = Field(description="nothing of it remains; if false, run the erasure again")
    dry_run: bool = Field(False, description="nothing was erased: `removed` says what would be")
    notes: list[str] = Field(default_factory=list)
