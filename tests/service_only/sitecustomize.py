"""On PYTHONPATH, a process sees only what `make run` installs: the packages of the extras
(tests, operator, eval, peers) cannot be imported (tests/integration/test_dev_run.py)."""

import importlib.abc
import sys

EXTRAS_ONLY = frozenset(
    {"pytest", "hypothesis", "schemathesis", "playwright", "kmock", "kopf", "kubernetes", "bm25s", "mem0", "helm"}
)


class _OnlyTheService(importlib.abc.MetaPathFinder):
    def find_spec(self, name, path=None, target=None):
        if name.partition(".")[0] in EXTRAS_ONLY:
            raise ModuleNotFoundError(f"{name} is not installed by `make run`", name=name)
        return None


sys.meta_path.insert(0, _OnlyTheService())
