"""OpenBLAS (the library numpy ships) held to one thread.

Two threads ran each of the encoder's small products on both cores, and OpenBLAS's helper thread
spins while it waits: under load it took a core of its own (docs/benchmarks.md). engram/__init__.py
sets OPENBLAS_NUM_THREADS before numpy loads, so the helper is never made; a process that loaded
numpy first (a benchmark, a notebook) is held to one thread here, through OpenBLAS's own call.
Not through threadpoolctl: its scan of the loaded libraries deadlocks against an import in
another thread (seen: `engram tenant create` hung about one start in twenty under load)."""

from __future__ import annotations

import ctypes
import functools
from pathlib import Path

# numpy's wheels name the calls after their 64-bit build; other builds keep the plain names.
_GET = ("scipy_openblas_get_num_threads64_", "openblas_get_num_threads")
_SET = ("scipy_openblas_set_num_threads64_", "openblas_set_num_threads")


@functools.cache
def _openblas() -> ctypes.CDLL | None:
    """The OpenBLAS this process loaded (numpy must be imported), or None (none, or not Linux)."""
    import numpy  # noqa: F401  (loads OpenBLAS)

    maps = Path("/proc/self/maps")
    if not maps.exists():
        return None
    paths = {line.split()[-1] for line in maps.read_text().splitlines() if "openblas" in line.lower()}
    return ctypes.CDLL(min(paths)) if paths else None


def _call(names: tuple[str, ...], *args: int) -> int | None:
    library = _openblas()
    function = next((getattr(library, n) for n in names if hasattr(library, n)), None) if library else None
    return None if function is None else function(*args)


def blas_threads() -> int | None:
    """How many threads OpenBLAS uses, or None when it cannot be asked."""
    return _call(_GET)


def hold_blas_to_one_thread() -> None:
    _call(_SET, 1)
