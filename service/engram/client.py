"""A typed Python client of engram's REST API, sync and async, with the server's own models.

    from engram.client import Engram
    with Engram("http://127.0.0.1:8080", key) as memory:
        memory.write("The user prefers window seats")
        hits = memory.search("seat preference").hits

``AsyncEngram`` has the same methods, awaited. Failures are raised as the server's errors
(engram/errors.py: InvalidInput with its ``field``, NotFound, Unauthorized, TooManyRequests with
``retry_after_seconds``, Unavailable...). Each operation is described once, as a ``_Call``; the two
clients only send it.
"""

from __future__ import annotations

import builtins
import json
from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime
from types import TracebackType
from typing import Any, Generic, TypeVar
from uuid import UUID

import httpx
from pydantic import BaseModel, TypeAdapter, ValidationError

from engram import errors
from engram.domain.judgement import Turn
from engram.domain.models import (
    BatchWriteResult,
    HistoryEvent,
    Memory,
    MemoryFilter,
    MemoryPage,
    MemoryPatch,
    NewMemory,
    WriteResult,
)
from engram.domain.search import SearchRequest, SearchResult
from engram.services.ingest import RememberResult

T = TypeVar("T")
Params = tuple[tuple[str, str], ...]

# How REST spells the repeatable filters in a query string: one ?tag= per value.
_QUERY_NAMES = {"types": "type", "kinds": "kind", "layers": "layer", "statuses": "status", "tags": "tag"}
_ERRORS: dict[str, type[errors.EngramError]] = {
    cls.code: cls
    for cls in (
        errors.InvalidInput,
        errors.NotFound,
        errors.Conflict,
        errors.Unauthorized,
        errors.Forbidden,
        errors.Misdirected,
        errors.PayloadTooLarge,
        errors.Unavailable,
        errors.ConfigurationError,
    )
}


@dataclass(frozen=True)
class _Call(Generic[T]):
    """One request of the API and how its answer is read."""

    method: str
    path: str
    read: Callable[[Any], T]
    body: Any = None
    params: Params = ()


def _model(model: type[T]) -> Callable[[Any], T]:
    adapter = TypeAdapter(model)
    return adapter.validate_python


M = TypeVar("M", bound=BaseModel)


def _valid(model: type[M], data: dict[str, Any]) -> M:
    """Checked here as the server checks it, and refused the same way: InvalidInput naming the field."""
    try:
        return model.model_validate(data)
    except ValidationError as exc:
        raise errors.invalid_input(exc.errors(include_url=False, include_input=False)) from None


def _body(model: BaseModel) -> Any:
    return model.model_dump(mode="json", exclude_unset=True)


def _filter_params(f: MemoryFilter) -> list[tuple[str, str]]:
    params = []
    for name, value in f.model_dump(mode="json", exclude_defaults=True).items():
        for one in value if isinstance(value, list) else [value]:
            params.append((_QUERY_NAMES.get(name, name), str(one).lower() if isinstance(one, bool) else str(one)))
    return params


def _raise_for(response: httpx.Response) -> None:
    """The server's error model as the exception it stands for."""
    if response.is_success:
        return
    try:
        error = response.json()["error"]
        code, message = error["code"], error["message"]
    except (ValueError, KeyError, TypeError):
        code, message, error = "error", f"{response.status_code} {response.reason_phrase}", {}
    if code == errors.TooManyRequests.code:
        retry = int(response.headers.get("retry-after", "1"))
        raise errors.TooManyRequests(message, retry_after_seconds=retry)
    kind = _ERRORS.get(code, errors.EngramError)
    raised = kind(message, field=error.get("field"), index=error.get("index"))
    raised.http_status = response.status_code
    raise raised


def _request(call: _Call[Any]) -> dict[str, Any]:
    """The call as httpx's request arguments (the same for both clients)."""
    content = None if call.body is None else json.dumps(call.body).encode()
    headers = {"Content-Type": "application/json"}
    return {"method": call.method, "url": call.path, "params": call.params, "content": content, "headers": headers}


def _answer(call: _Call[T], response: httpx.Response) -> T:
    _raise_for(response)
    return call.read(None if response.status_code == 204 else response.json())


class _Calls:
    """Every operation, once: what it sends and what it answers."""

    @staticmethod
    def write(item: NewMemory) -> _Call[WriteResult]:
        return _Call("POST", "/memories", _model(WriteResult), _body(item))

    @staticmethod
    def write_many(items: list[NewMemory]) -> _Call[BatchWriteResult]:
        return _Call("POST", "/memories/batch", _model(BatchWriteResult), {"items": [_body(i) for i in items]})

    @staticmethod
    def remember(turn: Turn) -> _Call[RememberResult]:
        return _Call("POST", "/remember", _model(RememberResult), _body(turn))

    @staticmethod
    def search(request: SearchRequest) -> _Call[SearchResult]:
        return _Call("POST", "/search", _model(SearchResult), _body(request))

    @staticmethod
    def page(f: MemoryFilter, limit: int, cursor: str | None) -> _Call[MemoryPage]:
        params = (*_filter_params(f), ("limit", str(limit)), *((("cursor", cursor),) if cursor else ()))
        return _Call("GET", "/memories", _model(MemoryPage), params=params)

    @staticmethod
    def get(memory_id: UUID | str, acting: Params) -> _Call[Memory]:
        return _Call("GET", f"/memories/{memory_id}", _model(Memory), params=acting)

    @staticmethod
    def update(memory_id: UUID | str, patch: MemoryPatch, acting: Params) -> _Call[Memory]:
        return _Call("PATCH", f"/memories/{memory_id}", _model(Memory), _body(patch), acting)

    @staticmethod
    def forget(memory_id: UUID | str, reason: str | None, acting: Params) -> _Call[Memory]:
        body = {"reason": reason} if reason else {}
        return _Call("POST", f"/memories/{memory_id}/forget", _model(Memory), body, acting)

    @staticmethod
    def restore(memory_id: UUID | str, acting: Params) -> _Call[Memory]:
        return _Call("POST", f"/memories/{memory_id}/restore", _model(Memory), params=acting)

    @staticmethod
    def purge(memory_id: UUID | str, acting: Params) -> _Call[None]:
        return _Call("DELETE", f"/memories/{memory_id}", lambda _: None, params=acting)

    @staticmethod
    def history(memory_id: UUID | str, acting: Params) -> _Call[list[HistoryEvent]]:
        return _Call("GET", f"/memories/{memory_id}/history", _model(list[HistoryEvent]), params=acting)


def _tenant_of(key: str, tenant: str | None) -> str:
    """A tenant key names its tenant (ek.<tenant>.<secret>)."""
    if tenant:
        return tenant
    parts = key.split(".")
    if len(parts) >= 3 and parts[0] == "ek" and parts[1]:
        return parts[1]
    raise errors.InvalidInput("give tenant=...: the key does not name one", field="tenant")


class _Client:
    """What both clients share: where they send, and the operations' arguments as models."""

    def __init__(self, url: str, key: str, tenant: str | None, user_id: str | None) -> None:
        self._base = f"{url.rstrip('/')}/t/{_tenant_of(key, tenant)}/v1"
        self._headers = {"Authorization": f"Bearer {key}"}
        self._user_id = user_id  # every call acts for this end user, unless it names another
        self._acting: Params = (("user_id", user_id),) if user_id else ()

    def _item(self, content: str, fields: dict[str, Any]) -> NewMemory:
        return _valid(NewMemory, {"user_id": self._user_id, **fields, "content": content})

    def _items(self, items: list[NewMemory | dict[str, Any] | str]) -> list[NewMemory]:
        out = []
        for item in items:
            if isinstance(item, NewMemory):
                out.append(item)
            elif isinstance(item, str):
                out.append(self._item(item, {}))
            else:
                out.append(self._item(item["content"], {k: v for k, v in item.items() if k != "content"}))
        return out

    def _turn(self, user: str, assistant: str | None, fields: dict[str, Any]) -> Turn:
        return _valid(Turn, {"user_id": self._user_id, **fields, "user": user, "assistant": assistant})

    def _filter(self, filter: MemoryFilter | None, fields: dict[str, Any]) -> MemoryFilter:
        given = {"user_id": self._user_id, **(filter.model_dump(exclude_unset=True) if filter else {}), **fields}
        return _valid(MemoryFilter, {k: v for k, v in given.items() if v is not None})

    def _search(
        self, query: str, top_k: int | None, explain: bool, now: datetime | None, f: MemoryFilter
    ) -> SearchRequest:
        return _valid(SearchRequest, {"query": query, "top_k": top_k, "explain": explain, "now": now, "filter": f})


class Engram(_Client):
    """engram's REST API, blocking. ``user_id``: the end user every call acts for (optional)."""

    def __init__(
        self,
        url: str,
        key: str,
        *,
        tenant: str | None = None,
        user_id: str | None = None,
        timeout: float = 30.0,
        transport: httpx.BaseTransport | None = None,
    ) -> None:
        super().__init__(url, key, tenant, user_id)
        self._http = httpx.Client(base_url=self._base, headers=self._headers, timeout=timeout, transport=transport)

    def _send(self, call: _Call[T]) -> T:
        return _answer(call, self._http.request(**_request(call)))

    def write(self, content: str, **fields: Any) -> WriteResult:
        """One memory; ``fields`` are NewMemory's (type, tags, occurred_at, replaces...)."""
        return self._send(_Calls.write(self._item(content, fields)))

    def write_many(self, items: builtins.list[NewMemory | dict[str, Any] | str]) -> BatchWriteResult:
        return self._send(_Calls.write_many(self._items(items)))

    def remember(self, user: str, assistant: str | None = None, **fields: Any) -> RememberResult:
        return self._send(_Calls.remember(self._turn(user, assistant, fields)))

    def search(
        self,
        query: str,
        *,
        top_k: int | None = None,
        explain: bool = False,
        now: datetime | None = None,
        filter: MemoryFilter | None = None,
        **filters: Any,
    ) -> SearchResult:
        """``filters`` are MemoryFilter's fields (types, tags, occurred_after...), or pass ``filter``."""
        return self._send(_Calls.search(self._search(query, top_k, explain, now, self._filter(filter, filters))))

    def list(
        self, *, limit: int = 50, cursor: str | None = None, filter: MemoryFilter | None = None, **filters: Any
    ) -> MemoryPage:
        return self._send(_Calls.page(self._filter(filter, filters), limit, cursor))

    def get(self, memory_id: UUID | str) -> Memory:
        return self._send(_Calls.get(memory_id, self._acting))

    def update(self, memory_id: UUID | str, **changes: Any) -> Memory:
        return self._send(_Calls.update(memory_id, _valid(MemoryPatch, changes), self._acting))

    def forget(self, memory_id: UUID | str, reason: str | None = None) -> Memory:
        return self._send(_Calls.forget(memory_id, reason, self._acting))

    def restore(self, memory_id: UUID | str) -> Memory:
        return self._send(_Calls.restore(memory_id, self._acting))

    def purge(self, memory_id: UUID | str) -> None:
        self._send(_Calls.purge(memory_id, self._acting))

    def history(self, memory_id: UUID | str) -> builtins.list[HistoryEvent]:
        return self._send(_Calls.history(memory_id, self._acting))

    def close(self) -> None:
        self._http.close()

    def __enter__(self) -> Engram:
        return self

    def __exit__(self, *_: type[BaseException] | BaseException | TracebackType | None) -> None:
        self.close()


class AsyncEngram(_Client):
    """The same API, awaited."""

    def __init__(
        self,
        url: str,
        key: str,
        *,
        tenant: str | None = None,
        user_id: str | None = None,
        timeout: float = 30.0,
        transport: httpx.AsyncBaseTransport | None = None,
    ) -> None:
        super().__init__(url, key, tenant, user_id)
        self._http = httpx.AsyncClient(base_url=self._base, headers=self._headers, timeout=timeout, transport=transport)

    async def _send(self, call: _Call[T]) -> T:
        return _answer(call, await self._http.request(**_request(call)))

    async def write(self, content: str, **fields: Any) -> WriteResult:
        return await self._send(_Calls.write(self._item(content, fields)))

    async def write_many(self, items: builtins.list[NewMemory | dict[str, Any] | str]) -> BatchWriteResult:
        return await self._send(_Calls.write_many(self._items(items)))

    async def remember(self, user: str, assistant: str | None = None, **fields: Any) -> RememberResult:
        return await self._send(_Calls.remember(self._turn(user, assistant, fields)))

    async def search(
        self,
        query: str,
        *,
        top_k: int | None = None,
        explain: bool = False,
        now: datetime | None = None,
        filter: MemoryFilter | None = None,
        **filters: Any,
    ) -> SearchResult:
        return await self._send(_Calls.search(self._search(query, top_k, explain, now, self._filter(filter, filters))))

    async def list(
        self, *, limit: int = 50, cursor: str | None = None, filter: MemoryFilter | None = None, **filters: Any
    ) -> MemoryPage:
        return await self._send(_Calls.page(self._filter(filter, filters), limit, cursor))

    async def get(self, memory_id: UUID | str) -> Memory:
        return await self._send(_Calls.get(memory_id, self._acting))

    async def update(self, memory_id: UUID | str, **changes: Any) -> Memory:
        return await self._send(_Calls.update(memory_id, _valid(MemoryPatch, changes), self._acting))

    async def forget(self, memory_id: UUID | str, reason: str | None = None) -> Memory:
        return await self._send(_Calls.forget(memory_id, reason, self._acting))

    async def restore(self, memory_id: UUID | str) -> Memory:
        return await self._send(_Calls.restore(memory_id, self._acting))

    async def purge(self, memory_id: UUID | str) -> None:
        await self._send(_Calls.purge(memory_id, self._acting))

    async def history(self, memory_id: UUID | str) -> builtins.list[HistoryEvent]:
        return await self._send(_Calls.history(memory_id, self._acting))

    async def aclose(self) -> None:
        await self._http.aclose()

    async def __aenter__(self) -> AsyncEngram:
        return self

    async def __aexit__(self, *_: type[BaseException] | BaseException | TracebackType | None) -> None:
        await self.aclose()
