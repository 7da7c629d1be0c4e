"""A retention's lifetimes: the service's defaults where the tenant says nothing, and the rule a
memory outlived (the shorter, when its layer and its type both have one)."""

from datetime import UTC, datetime, timedelta

import pytest
from hypothesis import given
from hypothesis import strategies as st
from pydantic import ValidationError

from engram.domain.models import Layer, MemoryType
from engram.domain.retention import MAX_DAYS, Lifetimes, Retention

NOW = datetime(2026, 12, 7, tzinfo=UTC)


def test_an_empty_retention_is_the_services_defaults():
    lifetimes = Lifetimes.of(Retention(), 1.0, 7.0, 30.0)
    assert lifetimes.layers == {Layer.session: 1.0, Layer.task: 7.0}
    assert lifetimes.types == {} and lifetimes.purge_after_days == 30.0
    layers, types = lifetimes.cutoffs(NOW)
    assert layers[Layer.session] == NOW - timedelta(days=1) and Layer.long_term not in layers and types == {}


def test_the_tenants_entries_replace_the_defaults_they_name():
    retention = Retention(layers={Layer.session: 7}, types={MemoryType.event: 365}, purge_after_days=0)
    lifetimes = Lifetimes.of(retention, 1.0, 7.0, 30.0)
    assert lifetimes.layers == {Layer.session: 7, Layer.task: 7.0}
    assert lifetimes.purge_after_days == 0  # purge at the first run: a delay of zero is a choice


def test_the_shorter_lifetime_is_the_reason():
    lifetimes = Lifetimes.of(Retention(layers={Layer.long_term: 30}, types={MemoryType.event: 10}), 1, 7, 30)
    stored = NOW - timedelta(days=31)  # past both
    assert (
        lifetimes.why_expired(Layer.long_term, MemoryType.event, stored, NOW)
        == "retention: event memories live 10 days"
    )
    assert (
        lifetimes.why_expired(Layer.long_term, MemoryType.fact, stored, NOW)
        == "retention: long_term memories live 30 days"
    )
    assert lifetimes.why_expired(Layer.long_term, MemoryType.fact, NOW - timedelta(days=29), NOW) is None
    assert lifetimes.why_expired(Layer.session, MemoryType.fact, NOW - timedelta(hours=25), NOW) == (
        "retention: session memories live 1 day"
    )
    half = Lifetimes.of(Retention(layers={Layer.session: 0.5}), 1, 7, 30)
    assert half.why_expired(Layer.session, MemoryType.fact, NOW - timedelta(hours=13), NOW) == (
        "retention: session memories live 12 hours"
    )


@given(
    st.dictionaries(st.sampled_from(list(Layer)), st.floats(0.01, MAX_DAYS)),
    st.dictionaries(st.sampled_from(list(MemoryType)), st.floats(0.01, MAX_DAYS)),
    st.sampled_from(list(Layer)),
    st.sampled_from(list(MemoryType)),
    st.floats(0, 2 * MAX_DAYS),
)
def test_a_memory_is_expired_exactly_when_the_cutoffs_say_so(layers, types, layer, type_, age):
    lifetimes = Lifetimes.of(Retention(layers=layers, types=types), 1, 7, 30)
    stored = NOW - timedelta(days=age)
    by_layer, by_type = lifetimes.cutoffs(NOW)
    past = (layer in by_layer and stored < by_layer[layer]) or (type_ in by_type and stored < by_type[type_])
    assert (lifetimes.why_expired(layer, type_, stored, NOW) is not None) == past


@pytest.mark.parametrize(
    "bad", [{"layers": {"session": 0}}, {"types": {"event": MAX_DAYS + 1}}, {"purge_after_days": -1}, {"x": 1}]
)
def test_a_bad_retention_is_refused(bad):
    with pytest.raises(ValidationError):
        Retention.model_validate(bad)
