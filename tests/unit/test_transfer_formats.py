"""The export format and the readers of other stores' exports (pure)."""

import json

import pytest
from hypothesis import given
from hypothesis import strategies as st

from engram.domain import transfer as fmt
from engram.errors import InvalidInput

JSON = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text(max_size=20),
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=10), inner, max_size=4),
    max_leaves=12,
)
KEYS = st.sampled_from(["type", "name", "entityType", "observations", "from", "to", "relationType", "memory", "id"])


@given(st.dictionaries(KEYS, JSON, max_size=6) | st.dictionaries(st.text(max_size=8), JSON, max_size=4))
def test_any_object_is_read_or_refused_with_invalid_input(data):
    """No record, however malformed, gets past the readers as anything but memories or a 4xx."""
    for read in (fmt.detect, lambda d: fmt.mem0_items(d, 1), lambda d: fmt.mcp_memory_items(d, 1)):
        try:
            read(data)
        except InvalidInput as exc:
            assert str(exc)


def test_formats_are_told_apart_by_their_first_object():
    assert fmt.detect({"engram": "memories", "version": 1}) == fmt.Format.engram
    assert fmt.detect({"type": "entity", "name": "x"}) == fmt.Format.mcp_memory
    assert fmt.detect({"type": "relation"}) == fmt.Format.mcp_memory
    assert fmt.detect({"id": "1", "memory": "likes tea"}) == fmt.Format.mem0
    assert fmt.detect({"results": []}) == fmt.Format.mem0
    with pytest.raises(InvalidInput, match="--format"):
        fmt.detect({"memory": {"id": 1}})


def test_mem0_records_keep_their_source_and_get_stable_ids():
    record = {"id": "a1", "memory": "Likes tea", "categories": ["food"], "user_id": "u", "hash": "h", "metadata": None}
    (item,) = fmt.mem0_items(record, 1)
    assert (item.content, item.tags, item.source) == ("Likes tea", ["food"], "mem0")
    assert item.metadata == {"mem0": {"id": "a1", "user_id": "u"}}
    assert item.external_id == fmt.mem0_items({"results": [record]}, 7)[0].external_id
    assert item.external_id != fmt.mem0_items({**record, "id": "a2"}, 1)[0].external_id


def test_mcp_memory_entities_and_relations_read_as_sentences():
    entity = {"type": "entity", "name": "Ann", "entityType": "person", "observations": ["Likes tea", " ", "Is 30"]}
    items = fmt.mcp_memory_items(entity, 1)
    assert [i.content for i in items] == ["Ann: Likes tea", "Ann: Is 30"] and items[0].tags == ["person"]
    assert len({i.external_id for i in items}) == 2
    (relation,) = fmt.mcp_memory_items({"type": "relation", "from": "Ann", "to": "Bo", "relationType": "knows_well"}, 2)
    assert relation.content == "Ann knows well Bo"
    with pytest.raises(InvalidInput, match="line 3: a relation needs"):
        fmt.mcp_memory_items({"type": "relation", "from": "Ann"}, 3)


def test_the_closing_line_counts_the_memories():
    assert json.loads(fmt.end_line(3)) == {"end": {"memories": 3}}
    assert fmt.read_memory({"end": {"memories": 3}}, 9) == fmt.End(memories=3)
    with pytest.raises(InvalidInput, match="line 9: memories"):
        fmt.read_memory({"end": {"memories": -1}}, 9)
