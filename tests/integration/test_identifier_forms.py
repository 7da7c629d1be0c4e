"""Codes as people type them (domain/identifiers.py): however a memory wrote a code and however a
query types it, the rule channel meets them, the exact code first; and memories written before
(migration tenant/0014) get the same forms."""

from __future__ import annotations

from importlib import resources

import pytest

from engram.domain.identifiers import extract_identifiers
from engram.domain.models import NewMemory
from engram.domain.search import SearchRequest

MIGRATION = (resources.files("engram.store.migrations") / "tenant" / "0014_identifier_forms.sql").read_text()
BACKFILL = MIGRATION[MIGRATION.index("UPDATE {{schema}}.memories m") :]

MEMORIES = {
    "flight": "The user's flight CA981 to Beijing leaves at nine",
    "other flight": "The user's flight CA982 to Shanghai leaves at ten",
    "order": "Order 981 of the user was delivered to the office",
    "locker": "The user's locker at the gym is B-1234",
    "parcel": "用户的快递单号是１２３４５６７",
}


@pytest.mark.parametrize(
    ("query", "answer"),
    [
        ("when does CA 981 leave", "flight"),
        ("when does ca-981 leave", "flight"),
        ("when does ＣＡ９８１ leave", "flight"),
        ("which locker is B1234", "locker"),
        ("which locker is b 1234", "locker"),
        ("快递单号1234567到了吗", "parcel"),
    ],
)
async def test_the_exact_code_ranks_first_however_it_is_typed(engram, tenant, query, answer):
    ctx, _ = tenant
    ids = {}
    for name, content in MEMORIES.items():
        ids[(await engram.writes.write(ctx, NewMemory(content=content))).memory.id] = name
    result = await engram.search.search(ctx, SearchRequest(query=query, top_k=3, explain=True))
    assert ids[result.hits[0].memory.id] == answer
    assert result.hits[0].channels.rule == 1.0


@pytest.mark.parametrize(
    ("content", "stored_before"),
    [
        ("The user's flight CA 981 to Beijing", ["981"]),
        ("The user's locker is B-1234", ["b-1234"]),
        ("用户的快递单号是１２３４５", []),
        ("The user's flight CA981", ["ca981"]),
        ("In 2024 the user moved to Lyon", ["2024"]),
        ("Email bob@example.com about SF-77 on 2024-05-03", ["bob@example.com", "2024-05-03", "sf-77"]),
    ],
)
async def test_memories_written_before_get_the_forms_a_new_one_gets(engram, tenant, content, stored_before):
    """identifier_forms (the migration's SQL) gives an older memory every form the Python reading
    gives a new one, in its identifiers and its search tokens."""
    ctx, _ = tenant
    memory = (await engram.writes.write(ctx, NewMemory(content=content))).memory
    async with engram.pool.acquire() as conn:
        await conn.execute(
            f"""UPDATE {ctx.schema}.memories SET identifiers = $2, search_tokens = array_to_tsvector($2)
                WHERE id = $1""",
            memory.id,
            stored_before,
        )
        await conn.execute(BACKFILL.replace("{{schema}}", ctx.schema))  # the migration's own statement
        identifiers, tokens = await conn.fetchrow(
            f"SELECT identifiers, tsvector_to_array(search_tokens) FROM {ctx.schema}.memories WHERE id = $1",
            memory.id,
        )
    assert set(extract_identifiers(content)) <= set(identifiers) <= set(tokens)
    assert set(stored_before) <= set(identifiers)  # nothing it held is lost
