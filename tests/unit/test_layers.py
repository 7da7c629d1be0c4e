"""Imports flow one way: the operator uses engram's domain and store only (never its services,
interfaces or runtime), and the domain imports nothing of engram's but errors."""

import ast
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def engram_imports(folder: Path) -> dict[str, set[str]]:
    found: dict[str, set[str]] = {}
    for path in folder.rglob("*.py"):
        for node in ast.walk(ast.parse(path.read_text())):
            names = [node.module or ""] if isinstance(node, ast.ImportFrom) else []
            names += [a.name for a in node.names] if isinstance(node, ast.Import) else []
            for name in names:
                if name == "engram" or name.startswith("engram."):
                    found.setdefault(path.name, set()).add(name)
    return found


def test_the_operator_depends_on_domain_and_store_only():
    allowed = ("engram.domain", "engram.store", "engram.errors")
    bad = {
        f: sorted(n for n in names if not n.startswith(allowed))
        for f, names in engram_imports(ROOT / "operator").items()
    }
    assert {f: n for f, n in bad.items() if n} == {}


def test_the_domain_depends_on_nothing_above_it():
    allowed = ("engram.domain", "engram.errors")
    folder = ROOT / "service" / "engram" / "domain"
    bad = {f: sorted(n for n in names if not n.startswith(allowed)) for f, names in engram_imports(folder).items()}
    assert {f: n for f, n in bad.items() if n} == {}
