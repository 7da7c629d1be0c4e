"""No statement leaves state on a pooled connection, which is why the pool skips asyncpg's reset
(store/db.py): settings are SET LOCAL, advisory locks are transaction-level, nothing LISTENs,
prepares by name or declares a cursor outside a transaction."""

import ast
import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
SESSION_STATE = re.compile(
    r"(?:^|;)\s*(?:SET\s+(?!LOCAL\b)(?!TRANSACTION\b)\w|RESET\b|LISTEN\b|PREPARE\b|DECLARE\b)"
    r"|pg_advisory_lock\(|pg_advisory_lock_shared\(|set_config\([^)]*,\s*false\)",
)  # case-sensitive: SQL here is upper case, prose is not


def strings():
    """Every string of the service, an f-string whole (its fields as {x})."""
    for path in (ROOT / "service" / "engram").rglob("*.py"):
        tree = ast.parse(path.read_text())
        parts = {id(p) for n in ast.walk(tree) if isinstance(n, ast.JoinedStr) for p in n.values}
        for node in ast.walk(tree):
            if isinstance(node, ast.JoinedStr):
                text = "".join(part.value if isinstance(part, ast.Constant) else "{x}" for part in node.values)
            elif isinstance(node, ast.Constant) and isinstance(node.value, str) and id(node) not in parts:
                text = node.value
            else:
                continue
            yield f"{path.relative_to(ROOT)}:{node.lineno}", text


def test_no_statement_keeps_state_on_its_connection():
    offenders = [(where, text[:80]) for where, text in strings() if SESSION_STATE.search(text)]
    assert offenders == []


def test_the_check_sees_session_state():
    assert SESSION_STATE.search("SET hnsw.ef_search = 100")
    assert SESSION_STATE.search("SELECT pg_advisory_lock(hashtext($1))")
    assert not SESSION_STATE.search("SET LOCAL enable_seqscan = off")
    assert not SESSION_STATE.search("SELECT pg_advisory_xact_lock(hashtext($1))")
    assert not SESSION_STATE.search("UPDATE t\n    SET a = 1")
    assert SESSION_STATE.search("SELECT 1; LISTEN changes")
