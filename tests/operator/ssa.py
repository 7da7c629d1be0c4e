"""Server-side apply as the API server does it, for the emulator: field ownership by manager, lists
merged by their keys, fields a manager stops applying removed (unless another owns them),
quantities stored in canonical form, a Deployment's replicas defaulted. Written from the
Kubernetes documentation, independently of the operator's drift.py, so the one checks the other.
https://kubernetes.io/docs/reference/using-api/server-side-apply/
"""

from __future__ import annotations

import copy
import re
from decimal import Decimal
from typing import Any

Path = tuple[Any, ...]  # dict keys, and ("item", key values) for an entry of a keyed list

# x-kubernetes-list-map-keys of the lists the operator's children hold.
LIST_KEYS: dict[str, tuple[str, ...]] = {
    "containers": ("name",),
    "initContainers": ("name",),
    "env": ("name",),
    "volumes": ("name",),
    "volumeMounts": ("mountPath",),
    "imagePullSecrets": ("name",),
    "topologySpreadConstraints": ("topologyKey", "whenUnsatisfiable"),
}
IDENTITY = {("apiVersion",), ("kind",), ("metadata", "name"), ("metadata", "namespace")}


def _list_key(field: Any, items: list[Any]) -> tuple[str, ...] | None:
    if not items or not all(isinstance(i, dict) for i in items):
        return None
    if field == "ports":
        return ("containerPort",) if "containerPort" in items[0] else ("port",)
    return LIST_KEYS.get(field) if isinstance(field, str) else None


def _item(entry: dict[str, Any], key: tuple[str, ...]) -> tuple[str, tuple[str, ...], tuple[Any, ...]]:
    return ("item", key, tuple(entry.get(k) for k in key))


def fields(obj: Any, path: Path = ()) -> set[Path]:
    """The leaf fields ``obj`` sets, as paths (an atomic list is one leaf)."""
    if isinstance(obj, dict):
        if not obj:
            return {path}
        return set().union(*(fields(v, (*path, k)) for k, v in obj.items() if k not in ("status", "managedFields")))
    if isinstance(obj, list):
        key = _list_key(path[-1] if path else None, obj)
        if key is None:
            return {path}
        out: set[Path] = set()
        for entry in obj:
            item = (*path, _item(entry, key))
            out |= {item} | fields(entry, item)
        return out
    return {path}


def _walk(obj: Any, element: Any) -> Any:
    if isinstance(element, tuple):
        _, key, values = element
        entries = obj if isinstance(obj, list) else []
        return next((e for e in entries if isinstance(e, dict) and _item(e, key)[2] == values), None)
    return obj.get(element) if isinstance(obj, dict) else None


def _get(obj: Any, path: Path) -> Any:
    for element in path:
        obj = _walk(obj, element)
        if obj is None:
            return None
    return obj


def _remove(obj: dict[str, Any], path: Path) -> None:
    """Remove the field at ``path``, and the maps its removal left empty."""
    for end in range(len(path), 0, -1):
        parent, last = _get(obj, path[: end - 1]), path[end - 1]
        if isinstance(last, tuple) and isinstance(parent, list):
            entry = _walk(parent, last)
            if entry is not None:
                parent.remove(entry)
        elif isinstance(parent, dict):
            parent.pop(last, None)
        if end > 1 and _get(obj, path[: end - 1]) not in ({}, []):
            return


def merge(live: Any, config: Any, field: Any = None) -> Any:
    """``config`` laid over ``live``: maps by key, keyed lists by entry, anything else replaced."""
    if isinstance(config, dict) and isinstance(live, dict):
        out = dict(live)
        for k, v in config.items():
            out[k] = merge(live.get(k), v, k)
        return out
    if isinstance(config, list) and isinstance(live, list):
        key = _list_key(field, config)
        if key is not None and all(isinstance(e, dict) for e in live):
            out_list = [copy.deepcopy(e) for e in live]
            for entry in config:
                match = next((i for i, e in enumerate(out_list) if _item(e, key) == _item(entry, key)), None)
                if match is None:
                    out_list.append(copy.deepcopy(entry))
                else:
                    out_list[match] = merge(out_list[match], entry, None)
            return out_list
    return copy.deepcopy(config)


def apply(live: dict[str, Any], config: dict[str, Any], manager: str, owners: dict[str, set[Path]]) -> dict[str, Any]:
    """``live`` after ``manager`` applied ``config`` (forced: it takes over the fields it sets);
    ``owners`` (manager -> fields) is updated in place."""
    applied = fields(config)
    others = set().union(*(f for m, f in owners.items() if m != manager))
    gone = owners.get(manager, set()) - applied - others - IDENTITY
    result = copy.deepcopy(live)
    for path in sorted(gone, key=len, reverse=True):
        _remove(result, path)
    result = merge(result, config)
    for m in owners:
        if m != manager:
            owners[m] -= applied
    owners[manager] = applied
    return result


def record(owners: dict[str, set[Path]], manager: str, changed: Any) -> None:
    """A create or an update (not an apply) by ``manager``: it owns what it set."""
    owners.setdefault(manager, set()).update(fields(changed) - IDENTITY)


QUANTITY = re.compile(r"^([+-]?[0-9]*\.?[0-9]+)(?:[eE]([+-]?[0-9]+))?(Ki|Mi|Gi|Ti|Pi|Ei|n|u|m|k|M|G|T|P|E)?$")
BINARY = {"Ki": 1, "Mi": 2, "Gi": 3, "Ti": 4, "Pi": 5, "Ei": 6}
DECIMAL = {"n": -9, "u": -6, "m": -3, "": 0, "k": 3, "M": 6, "G": 9, "T": 12, "P": 15, "E": 18}


def canonical_quantity(value: Any) -> Any:
    """A quantity as the API server stores it: ``1024Mi`` -> ``1Gi``, ``1000m`` -> ``1``,
    ``0.5`` -> ``500m``, ``1`` (a number) -> ``"1"``. Anything else is left as it is (the real server
    would refuse it)."""
    match = QUANTITY.match(str(value)) if not isinstance(value, bool) else None
    if match is None:
        return value
    number, exponent, suffix = match.group(1), match.group(2), match.group(3) or ""
    amount = Decimal(number) * Decimal(10) ** int(exponent or 0)
    if suffix in BINARY:
        amount *= Decimal(1024) ** BINARY[suffix]
        for name, power in sorted(BINARY.items(), key=lambda kv: -kv[1]):
            scaled = amount / Decimal(1024) ** power
            if scaled == scaled.to_integral_value():
                return f"{int(scaled)}{name}"
        if amount == amount.to_integral_value():
            return str(int(amount))
    else:
        amount *= Decimal(10) ** DECIMAL[suffix]
    for name, power in sorted(DECIMAL.items(), key=lambda kv: -kv[1]):
        scaled = amount / Decimal(10) ** power
        if scaled == scaled.to_integral_value():
            return f"{int(scaled)}{name}"
    return str(value)


def normalise(obj: Any, path: Path = ()) -> Any:
    """Quantities (resources' limits and requests, sizeLimit) in canonical form, in place."""
    if isinstance(obj, dict):
        for k, v in obj.items():
            if (path[-1:] in (("limits",), ("requests",)) and not isinstance(v, dict | list)) or k == "sizeLimit":
                obj[k] = canonical_quantity(v)
            else:
                normalise(v, (*path, k))
    elif isinstance(obj, list):
        for v in obj:
            normalise(v, path)
    return obj


def default(resource_plural: str, obj: dict[str, Any]) -> dict[str, Any]:
    """The defaults the operator's tests depend on: a Deployment without replicas has one."""
    if resource_plural == "deployments" and isinstance(obj.get("spec"), dict):
        obj["spec"].setdefault("replicas", 1)
    return obj
