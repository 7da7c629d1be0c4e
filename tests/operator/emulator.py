"""kmock's Kubernetes emulator, made faithful enough for kopf (see ../shared/notes/operator-testing.md).

Added over kmock 0.8: uid, resourceVersion, generation, creationTimestamp and generateName on
create; server-side apply as the API server does it (ssa.py: field ownership per manager, keyed
lists, removal of what a manager stops applying, canonical quantities, defaulted replicas);
status as a real subresource (the main resource ignores status, /status only takes it); 409 on a
merge patch naming a stale resourceVersion, 422 on a failed JSON-patch test; no-op patches change
nothing; lists carry a resourceVersion and a watch from it replays what came after, subscribed
before it catches up, so no event is lost. Not emulated, on purpose: garbage collection by
ownerReferences, controllers (a test plays the Deployment controller itself), admission, RBAC
and schema validation (the e2e tests on a real cluster cover those).
"""

from __future__ import annotations

import copy
import datetime
import secrets
import uuid
from collections import defaultdict
from collections.abc import AsyncIterator
from typing import Any

import jsonpatch
import kmock
from kmock._internal import dicts, enums, k8s, rendering
from kmock._internal.k8s import KubernetesError, KubernetesObjectNotFoundError

from tests.operator import ssa


class Conflict(KubernetesError):
    pass


class Invalid(KubernetesError):
    pass


class KubeEmulator(kmock.KubernetesEmulator):
    def __attrs_post_init__(self) -> None:
        super().__attrs_post_init__()
        self._version = 0
        self._history: defaultdict[Any, list[tuple[int, dict[str, Any]]]] = defaultdict(list)
        self._owners: defaultdict[Any, dict[str, set[ssa.Path]]] = defaultdict(dict)  # object -> manager -> fields

    async def _handle(self, request: rendering.Request) -> Any:
        gone: tuple[Any, ...] | None = None
        if request.resource is not None:
            async with self._lock:
                gone = await self._store(request)
        try:
            # Past the parent's own bookkeeping (done above), to the scaffold's reactions and fallbacks.
            return await k8s.KubernetesScaffold._handle(self, request)
        finally:
            if gone is not None:  # finalizers released: the object goes after the response
                async with self._lock:
                    raw = self._objects[gone].raw
                    self._objects[gone].delete()
                    await self._publish(request.resource, "DELETED", raw)

    async def _store(self, request: rendering.Request) -> tuple[Any, ...] | None:
        if request.action == enums.action.CREATE:
            await self._create(request)
        elif request.action == enums.action.UPDATE and request.name is not None:
            if self._applies_new_object(request):
                await self._create(request)
                return None
            return await self._patch(request)
        elif request.action == enums.action.DELETE and request.name is not None:
            await self._delete(request)
        return None

    @staticmethod
    def _manager(request: rendering.Request) -> str:
        return request.params.get("fieldManager") or "unknown"

    @staticmethod
    def _applying(request: rendering.Request) -> bool:
        return request.headers.get("Content-Type", "").startswith("application/apply-patch")

    def _stored(self, request: rendering.Request, body: dict[str, Any]) -> dict[str, Any]:
        """As the API server stores an object: defaults filled in, quantities canonical."""
        return ssa.default(request.resource.plural, ssa.normalise(body))

    def _stamp(self, body: dict[str, Any]) -> None:
        self._version += 1
        body.setdefault("metadata", {})["resourceVersion"] = str(self._version)

    async def _publish(self, resource: Any, kind: str, raw: dict[str, Any]) -> None:
        """Send a watch event and keep it, so a watch from a resourceVersion misses nothing."""
        if kind == "DELETED":
            raw = copy.deepcopy(raw)
            self._stamp(raw)
        event = {"type": kind, "object": raw}
        self._history[resource].append((int(raw["metadata"]["resourceVersion"]), event))
        await self._buses[resource].put(event)

    async def _create(self, request: rendering.Request) -> None:
        body = request.data
        meta = body.setdefault("metadata", {})
        if not meta.get("name") and meta.get("generateName"):
            meta["name"] = meta["generateName"] + secrets.token_hex(3)
        namespace = request.namespace or meta.get("namespace")
        if namespace:
            meta["namespace"] = namespace
        key = (request.resource, namespace, meta.get("name"))
        if key in self._objects and not self._objects[key].deleted:
            raise k8s.KubernetesObjectConflictError()
        meta.update(
            uid=str(uuid.uuid4()),
            generation=1,
            creationTimestamp=datetime.datetime.now(datetime.UTC).strftime("%Y-%m-%dT%H:%M:%SZ"),
        )
        self._owners[key] = {}
        ssa.record(self._owners[key], self._manager(request), body)
        body = self._stored(request, body)
        self._stamp(body)
        if key in self._objects:
            self._objects[key].create(body)
        else:
            self._objects[key] = body
        await self._publish(request.resource, "ADDED", self._objects[key].raw)

    def _applies_new_object(self, request: rendering.Request) -> bool:
        """Server-side apply creates what does not exist yet."""
        key = (request.resource, request.namespace, request.name)
        return self._applying(request) and (key not in self._objects or self._objects[key].deleted)

    def _key(self, request: rendering.Request) -> tuple[Any, ...]:
        key = (request.resource, request.namespace, request.name)
        if key not in self._objects or self._objects[key].deleted:
            raise KubernetesObjectNotFoundError()
        return key

    def _has_status_subresource(self, request: rendering.Request) -> bool:
        return request.resource in self.resources and "status" in self.resources[request.resource].subresources

    def _scoped(self, request: rendering.Request, patch: Any) -> Any:
        """What of a patch applies: only status through /status, all but status elsewhere."""
        to_status = request.subresource == "status"
        if not to_status and not self._has_status_subresource(request):
            return patch
        if isinstance(patch, list):  # preconditions (`test` ops) hold for either part
            return [
                op for op in patch if op.get("op") == "test" or op.get("path", "").startswith("/status") == to_status
            ]
        if to_status:
            return {"status": patch.get("status")} if "status" in patch else {}
        return {k: v for k, v in patch.items() if k != "status"}

    async def _patch(self, request: rendering.Request) -> tuple[Any, ...] | None:
        key = self._key(request)
        old = self._objects[key].raw
        patch = request.data or {}
        if isinstance(patch, dict):
            wanted = (patch.get("metadata") or {}).get("resourceVersion")
            if wanted and wanted != old["metadata"]["resourceVersion"]:
                raise Conflict(status=409, reason="Conflict", message="the object has been modified")
        scoped = self._scoped(request, patch)
        if self._applying(request):
            new = ssa.apply(old, scoped, self._manager(request), self._owners[key])
        else:
            try:
                new = dict(dicts.patch_dict(copy.deepcopy(old), scoped))
            except jsonpatch.JsonPatchException as e:  # a failed `test` (stale resourceVersion) or a bad op
                raise Invalid(status=422, reason="Invalid", message=str(e)) from e
            if isinstance(scoped, dict):
                ssa.record(self._owners[key], self._manager(request), scoped)
        new = self._stored(request, new)
        if new == old:
            return None
        if new.get("spec") != old.get("spec"):
            new["metadata"]["generation"] = old["metadata"].get("generation", 1) + 1
        self._stamp(new)
        self._objects[key].create(new)
        await self._publish(request.resource, "MODIFIED", self._objects[key].raw)
        meta = new["metadata"]
        return key if meta.get("deletionTimestamp") and not meta.get("finalizers") else None

    async def _delete(self, request: rendering.Request) -> None:
        key = self._key(request)
        old = self._objects[key].raw
        meta = old.get("metadata", {})
        if meta.get("deletionTimestamp"):
            return
        if meta.get("finalizers"):
            new = copy.deepcopy(old)
            new["metadata"]["deletionTimestamp"] = datetime.datetime.now(datetime.UTC).strftime("%Y-%m-%dT%H:%M:%SZ")
            self._stamp(new)
            self._objects[key].create(new)
            await self._publish(request.resource, "MODIFIED", self._objects[key].raw)
        else:
            self._objects[key].delete()
            await self._publish(request.resource, "DELETED", self._objects[key].last.raw)

    async def _serve_list(self, request: rendering.Request) -> Any:
        listed = await super()._serve_list(request)
        listed["metadata"]["resourceVersion"] = str(self._version)
        return listed

    def _matches(self, request: rendering.Request, namespace: str | None, name: str | None) -> bool:
        return (request.namespace is None or namespace == request.namespace) and (
            request.name is None or name == request.name
        )

    async def _serve_watch(self, request: rendering.Request) -> AsyncIterator[Any]:
        yield b""
        bus = self._buses[request.resource]
        since = request.params.get("resourceVersion")
        async with self._lock:  # subscribe and catch up at one instant: nothing falls in between
            mark = await bus.mark()
            if since and since.isdigit():  # what happened after the client's list
                backlog = [event for rv, event in self._history[request.resource] if rv > int(since)]
            else:  # no version: the current state, then changes
                backlog = [
                    {"type": "ADDED", "object": obj.raw}
                    for (resource, _, _), obj in self._objects.items()
                    if resource == request.resource and not obj.deleted
                ]
        try:
            for event in backlog:
                meta = event["object"]["metadata"]
                if self._matches(request, meta.get("namespace"), meta.get("name")):
                    yield event
            async for event in bus.stream(since=mark):
                meta = event.get("object", {}).get("metadata", {})
                if self._matches(request, meta.get("namespace"), meta.get("name")):
                    yield event
        finally:
            await bus.unmark(mark)

    def requests(self) -> list[rendering.Request]:
        """Every request served so far, oldest first."""
        return list(self._requests)

    def live(self, resource: str, namespace: str, name: str) -> dict[str, Any] | None:
        """The object as stored now, or None."""
        key = (kmock.resource(resource), namespace, name)
        if key not in self._objects or self._objects[key].deleted:
            return None
        return self._objects[key].raw

    def all(self, resource: str) -> list[dict[str, Any]]:
        wanted = kmock.resource(resource)
        return [obj.raw for (res, _, _), obj in self._objects.items() if res == wanted and not obj.deleted]
