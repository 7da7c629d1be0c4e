"""Which database instance a tenant may live on: only one of its own environment; where it already
lives if it lives anywhere; else the one with the fewest tenants, among those below their
``maxTenants``."""

from __future__ import annotations

from dataclasses import dataclass

from engram_operator.config import Instance


class PlacementError(Exception):
    """The spec cannot be satisfied by configuration: retrying will not help."""


class NoRoom(Exception):
    """Every instance the tenant may go to is full: it waits (retried) until one has room."""


@dataclass(frozen=True)
class Survey:
    """What placement needs to know of an instance: whether the tenant lives there, and how many do."""

    instance: str
    holds_tenant: bool
    tenants: int
    taken_by: str | None = None  # another owner of the tenant's name there (None: nobody else)
    capacity: int | None = None  # the instance's maxTenants (None: no limit)

    @property
    def name_taken(self) -> bool:
        return self.taken_by is not None

    @property
    def full(self) -> bool:
        return self.capacity is not None and self.tenants >= self.capacity


def candidates(environment: str, instances: list[Instance]) -> list[Instance]:
    """The instances a tenant of ``environment`` may go to."""
    serving = [i for i in instances if i.environment == environment]
    if not serving:
        raise PlacementError(f"no database instance serves the {environment} environment")
    return serving


def place(environment: str, requested: str, instances: list[Instance]) -> Instance:
    """The instance named ``requested``, if it serves the tenant's environment."""
    chosen = next((i for i in instances if i.name == requested), None)
    if chosen is None:
        raise PlacementError(f"no database instance named {requested!r} is configured")
    if chosen.environment != environment:
        raise PlacementError(
            f"instance {requested!r} serves {chosen.environment}, this tenant is {environment}: refused"
        )
    return chosen


def choose(surveys: list[Survey]) -> str:
    """The instance that holds the tenant already (its placement was recorded nowhere else: a
    restored or re-created resource), else the one with the fewest tenants (by name on a tie)
    among those where nobody else holds its name and that have room."""
    holding = sorted(s.instance for s in surveys if s.holds_tenant)
    if holding:
        return holding[0]
    free = [s for s in surveys if not s.name_taken]
    if not free:
        holders = ", ".join(sorted({s.taken_by or "" for s in surveys}))
        raise PlacementError(f"the tenant's name belongs to {holders} on every instance of its environment: refused")
    roomy = [s for s in free if not s.full]
    if not roomy:
        held = ", ".join(f"{s.instance} {s.tenants}/{s.capacity}" for s in sorted(free, key=lambda s: s.instance))
        raise NoRoom(f"every instance this tenant may go to is full ({held}): add an instance or raise its maxTenants")
    return min(roomy, key=lambda s: (s.tenants, s.instance)).instance
