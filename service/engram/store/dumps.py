"""A tenant's data from a `pg_dump -n <schema>` backup, loaded into another tenant's schema.

`pg_restore --data-only -f -` writes the dump's data as SQL text: a ``COPY <schema>.<table>
(<columns>) FROM stdin;`` header, the rows in COPY's text format, a ``\\.`` line, and ``SELECT
pg_catalog.setval('<schema>.<sequence>', n, called);`` for each sequence. Only those are read,
never executed as SQL: the rows stream to the same table of the target schema by COPY (a table at a
time, in bounded memory), so the source schema's name, whatever it is, never reaches the target.
"""

from __future__ import annotations

import asyncio
import contextlib
import re
from collections.abc import AsyncIterator

import asyncpg

from engram.errors import InvalidInput

# What a restore brings over: the memories and their history. The rest is the target tenant's own
# (its meta row, API keys and migration records) or derived (the vector sums, kept by triggers).
RESTORED_TABLES = ("memories", "memory_history")
END_OF_DATA = "\\."
MAX_ROW_BYTES = 256 * 1024 * 1024

_IDENT = r'(?:"(?:[^"]|"")+"|[A-Za-z_][A-Za-z0-9_$]*)'
_COPY = re.compile(rf"^COPY ({_IDENT})\.({_IDENT}) \((.*)\) FROM stdin;$")
_SETVAL = re.compile(rf"^SELECT pg_catalog\.setval\('({_IDENT})\.({_IDENT})', (\d+), (true|false)\);$")


class DumpError(InvalidInput):
    """The dump cannot be restored: not one tenant's, or cut short."""


def _unquote(identifier: str) -> str:
    return identifier[1:-1].replace('""', '"') if identifier.startswith('"') else identifier


class _Source:
    """The dump's lines, and the one schema they may name."""

    def __init__(self, lines: AsyncIterator[str]) -> None:
        self.lines = lines
        self.schema: str | None = None

    model_checked = False

    def named(self, schema: str) -> None:
        if self.schema not in (None, schema):
            raise DumpError(f"the dump holds more than one schema ({self.schema}, {schema}): not one tenant's")
        self.schema = schema

    async def rows(self, table: str) -> AsyncIterator[bytes]:
        """The COPY rows up to the end-of-data line, newline-terminated."""
        async for line in self.lines:
            if line.rstrip("\n") == END_OF_DATA:
                return
            yield (line if line.endswith("\n") else line + "\n").encode()
        raise DumpError(f"the dump ends inside the data of {table}")


async def _check_model(source: _Source, columns: list[str], model: tuple[str, int]) -> None:
    rows = [row async for row in source.rows("meta")]
    if len(rows) != 1 or not {"embedding_model", "embedding_dim"} <= set(columns):
        raise DumpError("the dump's meta table is not a tenant's")
    values = dict(zip(columns, rows[0].decode().rstrip("\n").split("\t"), strict=False))
    found = (values["embedding_model"], int(values["embedding_dim"]))
    if found != model:
        raise DumpError(
            f"the dump's vectors are {found[0]} ({found[1]} dimensions), this tenant's {model[0]} "
            f"({model[1]}): restore into a tenant of the same embedding model"
        )
    source.model_checked = True


async def load(
    conn: asyncpg.Connection, schema: str, lines: AsyncIterator[str], model: tuple[str, int]
) -> dict[str, int]:
    """Copy the restored tables' rows into ``schema`` (unquoted name) and set its sequences; returns
    rows per table. ``model`` is the target's embedding model and dimension: a dump whose vectors
    are another model's is refused, wherever its meta table comes (the transaction, the caller's,
    undoes any rows loaded before): a failure leaves the target as it was."""
    source, counts = _Source(lines), {}
    async for line in source.lines:
        text = line.rstrip("\n")
        if copy := _COPY.match(text):
            source.named(_unquote(copy.group(1)))
            table = _unquote(copy.group(2))
            if table == "meta":
                columns = [_unquote(c.strip()) for c in copy.group(3).split(",")]
                await _check_model(source, columns, model)
                continue
            if table not in RESTORED_TABLES:
                async for _ in source.rows(table):
                    pass
                continue
            columns = [_unquote(c.strip()) for c in copy.group(3).split(",")]
            try:
                status = await conn.copy_to_table(
                    table, source=source.rows(table), columns=columns, schema_name=schema, format="text"
                )
            except asyncpg.PostgresError as e:  # another vector dimension, a column this version lacks
                raise DumpError(f"the dump's {table} do not fit this tenant: {e}") from e
            counts[table] = int(status.split()[-1])
        elif setval := _SETVAL.match(text):
            source.named(_unquote(setval.group(1)))
            await conn.execute(
                "SELECT pg_catalog.setval(format('%I.%I', $1::text, $2::text), $3, $4)",
                schema,
                _unquote(setval.group(2)),
                int(setval.group(3)),
                setval.group(4) == "true",
            )
    if not source.model_checked:
        raise DumpError("the dump holds no meta table: is it a tenant's schema, dumped with pg_dump -n?")
    if "memories" not in counts:
        raise DumpError("the dump holds no table of memories: is it a tenant's schema, dumped with pg_dump -n?")
    return counts


async def restore_output(dump: str, pg_restore: str) -> AsyncIterator[str]:
    """The data of a custom-format dump, as `pg_restore --data-only` writes it. Raises DumpError
    when pg_restore fails (not a dump, or one newer than this pg_restore)."""
    process = await asyncio.create_subprocess_exec(
        pg_restore,
        "--data-only",
        "--file=-",
        dump,
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE,
        limit=MAX_ROW_BYTES,  # a row is one line: a long memory with its vector as text is far over 64 KiB
    )
    assert process.stdout is not None and process.stderr is not None
    errors = asyncio.ensure_future(process.stderr.read())
    try:
        while line := await process.stdout.readline():
            yield line.decode()
    finally:
        if process.returncode is None:
            with contextlib.suppress(ProcessLookupError):
                process.kill()
        code = await process.wait()
        message = (await errors).decode().strip()
    if code != 0:
        raise DumpError(f"pg_restore could not read {dump}: {message or f'exit status {code}'}")
