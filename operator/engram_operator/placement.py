"""Which database instance a tenant may live on: only one of its own environment."""

from __future__ import annotations

from engram_operator.config import Instance


class PlacementError(Exception):
    """The spec cannot be satisfied by configuration: retrying will not help."""


def place(environment: str, requested: str | None, instances: list[Instance]) -> Instance:
    candidates = [i for i in instances if i.environment == environment]
    if requested:
        chosen = next((i for i in instances if i.name == requested), None)
        if chosen is None:
            raise PlacementError(f"no database instance named {requested!r} is configured")
        if chosen.environment != environment:
            raise PlacementError(
                f"instance {requested!r} serves {chosen.environment}, this tenant is {environment}: refused"
            )
        return chosen
    if not candidates:
        raise PlacementError(f"no database instance serves the {environment} environment")
    return sorted(candidates, key=lambda i: i.name)[0]
