import pytest

from engram_operator.config import Instance
from engram_operator.placement import PlacementError, place

INSTANCES = [
    Instance(name="pg-test-b", environment="test", adminDsn="postgresql://a@h/db"),
    Instance(name="pg-test-a", environment="test", adminDsn="postgresql://a@h/db"),
    Instance(name="pg-prod", environment="prod", adminDsn="postgresql://a@h/db"),
]


def test_a_tenant_goes_to_an_instance_of_its_environment():
    assert place("test", None, INSTANCES).name == "pg-test-a"
    assert place("prod", None, INSTANCES).name == "pg-prod"
    assert place("test", "pg-test-b", INSTANCES).name == "pg-test-b"


def test_asking_for_the_other_environments_instance_is_refused():
    with pytest.raises(PlacementError, match="serves prod"):
        place("test", "pg-prod", INSTANCES)
    with pytest.raises(PlacementError, match="no database instance named"):
        place("test", "pg-nowhere", INSTANCES)
    with pytest.raises(PlacementError, match="no database instance serves"):
        place("prod", None, INSTANCES[:2])
