"""A dependency out of reach (the database, Redis, an embedding or LLM API), logged as an outage:
one warning when it begins, one line when it ends, however many requests meet it in between."""

from __future__ import annotations

import logging
import threading
import time


class Outage:
    """The state of one dependency as its callers see it. ``began`` on every failure that means it
    is out of reach, ``ended`` on every success (cheap when nothing is wrong): only the first of
    each is logged. Safe from any thread."""

    def __init__(self, log: logging.Logger, dependency: str, meanwhile: str) -> None:
        self._log = log
        self.dependency = dependency
        self._meanwhile = meanwhile  # what callers get while it lasts
        self._since: float | None = None
        self._lock = threading.Lock()

    @property
    def ongoing(self) -> bool:
        return self._since is not None

    def began(self, exc: BaseException) -> None:
        with self._lock:
            if self._since is not None:
                return
            self._since = time.monotonic()
        self._log.warning("%s unreachable (%s: %s); %s", self.dependency, type(exc).__name__, exc, self._meanwhile)

    def ended(self) -> None:
        if self._since is None:  # the usual case: no lock taken
            return
        with self._lock:
            if self._since is None:
                return
            lasted, self._since = time.monotonic() - self._since, None
        self._log.info("%s is back after %.1f s out of reach", self.dependency, lasted)
