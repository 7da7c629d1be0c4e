"""Every table a SQL statement touches must be named with its schema (``{schema}.memories``).

The pool's search_path holds only ``public`` (extensions, no tables), so an unqualified name also
fails at run time; this test catches it before anything runs.
"""

import ast
import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
SOURCES = [ROOT / "service" / "engram", ROOT / "operator" / "engram_operator"]
TABLE_REF = re.compile(
    r"\b(?:FROM|JOIN|INTO|UPDATE|TABLE(?: IF NOT EXISTS)?|REFERENCES|ON)\s+"
    r"(?!ONLY\b)([A-Za-z_\"{][\w\"{}.]*)",
    re.IGNORECASE,
)
# Words that may follow those keywords without being a table.
NOT_TABLES = {
    "conflict",
    "delete",
    "update",
    "commit",
    "select",
    "unnest",
    "jsonb_each",  # set-returning functions, like unnest
    "regexp_matches",
    "lateral",
    "of",
    "set",
    "as",
    "on",
}  # "DO UPDATE SET"
# Case-sensitive: SQL here is written in upper case, prose ("Update a memory") is not.
SQL_START = re.compile(r"^\s*(SELECT|INSERT|UPDATE|DELETE|CREATE|ALTER|WITH|DROP)\b")


def sql_strings():
    for path in (p for source in SOURCES for p in source.rglob("*.py")):
        tree = ast.parse(path.read_text())
        parts = {id(p) for n in ast.walk(tree) if isinstance(n, ast.JoinedStr) for p in n.values}
        for node in ast.walk(tree):
            if id(node) in parts:
                continue
            if isinstance(node, ast.JoinedStr):
                text = "".join(part.value if isinstance(part, ast.Constant) else "{x}" for part in node.values)
            elif isinstance(node, ast.Constant) and isinstance(node.value, str):
                text = node.value
            else:
                continue
            if SQL_START.match(text):
                yield f"{path.name}:{node.lineno}", text
    for path in (p for source in SOURCES for p in source.rglob("*.sql")):
        yield path.name, re.sub(r"--[^\n]*", "", path.read_text())


CTE = re.compile(r"(?:\bWITH(?:\s+RECURSIVE)?|,)\s*(\w+)\s*(?:\([^)]*\))?\s+AS\s*\(", re.IGNORECASE)
# A statement trigger's transition tables are the trigger's own relations, not the schema's.
TRANSITION = re.compile(r"\b(?:NEW|OLD)\s+TABLE\s+AS\s+(\w+)", re.IGNORECASE)


def unqualified(text: str) -> list[str]:
    found = []
    ctes = {name.lower() for name in CTE.findall(text)}  # a WITH query's own names are not tables
    ctes |= {name.lower() for name in TRANSITION.findall(text)}
    for match in TABLE_REF.finditer(text):
        name = match.group(1)
        if name.lower() in NOT_TABLES | ctes or name.startswith("("):
            continue
        if match.group(0).upper().startswith("ON") and not re.match(r"ON\s+[\w\"{}.]+\s*\(", text[match.start() :]):
            continue  # "ON" of a join condition or ON CONFLICT, not "CREATE INDEX ... ON table (...)"
        if "." not in name:
            found.append(name)
    return found


def test_checker_catches_an_unqualified_table():
    assert unqualified("SELECT id FROM memories WHERE x = 1") == ["memories"]
    assert unqualified("CREATE INDEX i ON memories (id)") == ["memories"]
    assert unqualified("SELECT id FROM {x}.memories m JOIN {x}.memory_history h ON h.memory_id = m.id") == []


def test_every_statement_names_its_schema():
    statements = list(sql_strings())
    assert len(statements) > 20, "the scan found too few SQL statements to be looking in the right place"
    offenders = {where: names for where, text in statements if (names := unqualified(text))}
    assert offenders == {}
