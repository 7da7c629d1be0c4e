import pytest

from engram_operator.config import Instance
from engram_operator.placement import NoRoom, PlacementError, Survey, candidates, choose, place

INSTANCES = [
    Instance(name="pg-test-b", environment="test", adminDsn="postgresql://a@h/db"),
    Instance(name="pg-test-a", environment="test", adminDsn="postgresql://a@h/db"),
    Instance(name="pg-prod", environment="prod", adminDsn="postgresql://a@h/db"),
]


def test_a_tenant_goes_to_an_instance_of_its_environment():
    assert [i.name for i in candidates("test", INSTANCES)] == ["pg-test-b", "pg-test-a"]
    assert [i.name for i in candidates("prod", INSTANCES)] == ["pg-prod"]
    assert place("test", "pg-test-b", INSTANCES).name == "pg-test-b"


def test_a_new_tenant_goes_where_it_already_lives_else_to_the_emptiest_instance():
    assert choose([Survey("pg-a", False, 3), Survey("pg-b", False, 1), Survey("pg-c", False, 2)]) == "pg-b"
    assert choose([Survey("pg-b", False, 1), Survey("pg-a", False, 1)]) == "pg-a"  # a tie: by name
    assert choose([Survey("pg-a", False, 0), Survey("pg-b", True, 9)]) == "pg-b"


def test_asking_for_the_other_environments_instance_is_refused():
    with pytest.raises(PlacementError, match="serves prod"):
        place("test", "pg-prod", INSTANCES)
    with pytest.raises(PlacementError, match="no database instance named"):
        place("test", "pg-nowhere", INSTANCES)
    with pytest.raises(PlacementError, match="no database instance serves"):
        candidates("prod", INSTANCES[:2])


def test_an_instance_where_another_owner_holds_the_name_is_passed_over():
    assert choose([Survey("pg-a", False, 0, taken_by="k8s:c/team-a/x"), Survey("pg-b", False, 5)]) == "pg-b"
    with pytest.raises(PlacementError, match="belongs to k8s:c/team-a/x on every instance"):
        choose([Survey("pg-a", False, 0, taken_by="k8s:c/team-a/x")])


def test_a_full_instance_is_passed_over_and_none_with_room_means_waiting():
    assert choose([Survey("pg-a", False, 3, capacity=3), Survey("pg-b", False, 9)]) == "pg-b"
    assert choose([Survey("pg-a", False, 2, capacity=3), Survey("pg-b", False, 9)]) == "pg-a"
    assert choose([Survey("pg-a", True, 5, capacity=3), Survey("pg-b", False, 0)]) == "pg-a"  # it lives there
    with pytest.raises(NoRoom, match=r"full \(pg-a 3/3, pg-b 4/4\): add an instance or raise its maxTenants"):
        choose([Survey("pg-b", False, 4, capacity=4), Survey("pg-a", False, 3, capacity=3)])
