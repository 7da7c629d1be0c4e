"""The end users of a tenant, as engram knows them: from the memories they own (a user appears
with their first memory; nothing else about them is kept)."""

from __future__ import annotations

from datetime import datetime

from pydantic import BaseModel, Field


class UserSummary(BaseModel):
    user_id: str
    active: int = Field(description="memories in search")
    superseded: int = Field(description="replaced by newer ones, kept as history")
    forgotten: int = Field(description="forgotten, restorable until purged")
    last_written_at: datetime = Field(description="when the user's newest memory was stored")


class UserPage(BaseModel):
    users: list[UserSummary] = Field(description="by user id")
    next_cursor: str | None = Field(None, description="pass back as `after` for the next page")


class UserKey(BaseModel):
    user_id: str
    api_key: str = Field(description="shown once: it reaches this user's memories and the tenant's shared ones only")


class KeysRevoked(BaseModel):
    revoked: int = Field(description="keys that were valid until now")
