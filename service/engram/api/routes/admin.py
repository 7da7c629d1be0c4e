"""REST: the admin API, for the configured admin key only: create, list, re-key and delete
tenants (with the environment guard the operator keeps)."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Annotated

from fastapi import APIRouter, Body, Depends, Path, Request, status

from engram.api.deps import EngramDep, admin, known_query
from engram.api.errors import ERROR_RESPONSES
from engram.domain.erasure import ErasureReceipt
from engram.domain.provisioning import KeyRotation, NewTenant, RotatedKey, TenantCreated, TenantList, TenantSummary

router = APIRouter(
    prefix="/admin/v1",
    tags=["admin"],
    responses=ERROR_RESPONSES,
    dependencies=[Depends(known_query), Depends(admin)],
)
NamePath = Annotated[str, Path(max_length=40, description="the tenant's name")]


@router.get("/tenants")
async def list_tenants(engram: EngramDep) -> TenantList:
    """Every tenant of this database, by name."""
    return TenantList(
        tenants=[
            TenantSummary(name=t.name, schema_name=t.schema, created_at=t.created_at, managed_by=t.managed_by)
            for t in await engram.tenants.list()
        ]
    )


@router.post("/tenants", status_code=status.HTTP_201_CREATED)
async def create_tenant(new: NewTenant, request: Request, engram: EngramDep) -> TenantCreated:
    """A new tenant: its own schema and its first API key (shown once). Refused (409) when the
    name is taken, or when this service's database serves another environment than the one asked."""
    context, key = await engram.tenants.create(new.name, new.environment)
    base = engram.settings.public_url or str(request.base_url)
    base = base.rstrip("/")
    return TenantCreated(
        tenant=context.name,
        schema_name=context.schema.strip('"'),
        environment=new.environment,
        api_key=key,
        mcp_url=f"{base}/t/{context.name}/mcp",
        rest_url=f"{base}/t/{context.name}/v1",
    )


@router.post("/tenants/{name}/keys", status_code=status.HTTP_201_CREATED)
async def rotate_tenant_key(
    name: NamePath, engram: EngramDep, rotation: Annotated[KeyRotation | None, Body()] = None
) -> RotatedKey:
    """A new key for the tenant; its keys before it stop working after `overlap_seconds` (now by
    default). Keys bound to its users stay."""
    overlap = (rotation or KeyRotation()).overlap_seconds
    key = await engram.tenants.rotate_key(name, overlap)
    return RotatedKey(tenant=name, api_key=key, old_keys_valid_until=datetime.now(UTC) + timedelta(seconds=overlap))


@router.delete("/tenants/{name}")
async def delete_tenant(name: NamePath, engram: EngramDep) -> ErasureReceipt:
    """Erase the tenant for good, now: its schema (memories, history, keys) and its cached
    queries; the receipt counts the rows per table and checks nothing remains. A tenant a
    MemoryTenant manages is refused (409): delete that object instead. Asked again, it answers
    with when the tenant went."""
    return await engram.erasure.tenant(name)
