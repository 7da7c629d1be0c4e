"""Whether a child has drifted from what the operator applies: the API server's view, not a diff.

The server stores what server-side apply gave it in its own way, and other managers own fields
next to the operator's, so a plain comparison would see drift that is not there and fight forever:

- Quantities are stored in canonical form (`cpu: 1000m` comes back as `"1"`, `1024Mi` as `1Gi`):
  they are compared by value.
- Lists of named things (containers, env, volumes, ports, ...) are merged by key: an entry another
  manager added (a sidecar injector's env var) is its own, not drift. The operator's entries must
  all be there, as it set them.
- Other lists are atomic (`args`, `command`, tolerations): equal, item by item.
- An empty map, list or string is not stored (`nodeSelector: {}`): absent is the same.
- A field the spec no longer sets is removed by the next apply (server-side apply drops what its
  manager stopped setting), but a subset check cannot see it: every child carries a digest of its
  manifest (`APPLIED`), so any change of the spec is an apply, and drift by others is a comparison.
"""

from __future__ import annotations

import hashlib
import json
from decimal import Decimal, InvalidOperation
from typing import Any

from kubernetes.utils.quantity import parse_quantity

APPLIED = "memory.engram.dev/applied"

# The keys the API server merges these lists by (their x-kubernetes-list-map-keys).
MERGE_KEYS: dict[str, tuple[str, ...]] = {
    "containers": ("name",),
    "initContainers": ("name",),
    "env": ("name",),
    "volumes": ("name",),
    "volumeMounts": ("mountPath",),
    "imagePullSecrets": ("name",),
    "topologySpreadConstraints": ("topologyKey", "whenUnsatisfiable"),
}
# Container ports are keyed by containerPort, a Service's by port.
PORT_KEYS = (("containerPort",), ("port",))
QUANTITY_PARENTS = {"limits", "requests"}


def with_digest(manifest: dict[str, Any]) -> dict[str, Any]:
    """The manifest, annotated with a digest of itself: what the operator applied last."""
    digest = hashlib.sha256(json.dumps(manifest, sort_keys=True).encode()).hexdigest()[:16]
    meta = manifest["metadata"]
    return {**manifest, "metadata": {**meta, "annotations": {**(meta.get("annotations") or {}), APPLIED: digest}}}


def drifted(desired: Any, live: Any) -> bool:
    """Whether ``live`` no longer holds what ``desired`` sets (as the API server would store it)."""
    return not _holds(desired, live, ())


def _holds(desired: Any, live: Any, path: tuple[str, ...]) -> bool:
    if live is None and desired in ({}, [], "", None):
        return True  # the server does not store an empty map, list or string: absent is the same
    if isinstance(desired, dict):
        return isinstance(live, dict) and all(_holds(v, live.get(k), (*path, k)) for k, v in desired.items())
    if isinstance(desired, list):
        if not isinstance(live, list):
            return False
        key = _merge_key(path[-1] if path else "", desired)
        if key is None:
            return len(desired) == len(live) and all(_holds(d, x, path) for d, x in zip(desired, live, strict=True))
        by_key = {_key_of(item, key): item for item in live if isinstance(item, dict)}
        return all(_holds(item, by_key.get(_key_of(item, key)), path) for item in desired)
    if _is_quantity(path):
        return _same_quantity(desired, live)
    return bool(desired == live)


def _merge_key(field: str, items: list[Any]) -> tuple[str, ...] | None:
    if not items or not all(isinstance(i, dict) for i in items):
        return None
    if field == "ports":
        return next((k for k in PORT_KEYS if all(k[0] in i for i in items)), None)
    key = MERGE_KEYS.get(field)
    return key if key and all(all(k in i for k in key) for i in items) else None


def _key_of(item: dict[str, Any], key: tuple[str, ...]) -> tuple[Any, ...]:
    return tuple(item.get(k) for k in key)


def _is_quantity(path: tuple[str, ...]) -> bool:
    """resources.limits.cpu and the like, an emptyDir's sizeLimit."""
    return (len(path) >= 2 and path[-2] in QUANTITY_PARENTS) or path[-1:] == ("sizeLimit",)


def _same_quantity(desired: Any, live: Any) -> bool:
    if desired == live:
        return True
    if live is None or isinstance(desired, bool) or isinstance(live, bool):
        return False
    try:
        return bool(Decimal(parse_quantity(desired)) == Decimal(parse_quantity(live)))
    except (ValueError, InvalidOperation, TypeError):
        return False
