"""Static checks of the files a platform team runs (no Docker engine here): the compose file against
the Compose specification, the Dockerfile through hadolint."""

import subprocess
import sys
from pathlib import Path

import compose_spec

ROOT = Path(__file__).resolve().parents[2]
# The images the stack pulls: official, pinned to a major version (pgvector 0.8 ships for pg17).
IMAGES = {"postgres": "pgvector/pgvector:pg17", "redis": "redis:7-alpine"}


def compose() -> compose_spec.ComposeSpecification:
    return compose_spec.PyCompose.from_yaml((ROOT / "docker-compose.yml").read_text()).to_spec()


def test_compose_follows_the_spec_and_pulls_real_images():
    services = compose().services
    assert {name: services[name].image for name in IMAGES} == IMAGES
    assert services["migrate"].build is not None and services["engram"].image == services["migrate"].image


def test_compose_waits_for_healthy_services_and_keeps_data():
    services = compose().services
    for name in ("postgres", "redis", "engram"):
        assert services[name].healthcheck is not None, name
    depends = {name: dep.condition for name, dep in services["engram"].depends_on.items()}
    assert depends == {
        "postgres": "service_healthy",
        "redis": "service_healthy",
        "migrate": "service_completed_successfully",
    }
    assert "--appendonly" in services["redis"].command and "yes" in services["redis"].command
    assert services["postgres"].volumes and services["redis"].volumes


def test_compose_runs_the_forgetting_schedule_and_demands_a_password():
    environment = compose().services["engram"].environment
    assert environment["ENGRAM_LIFECYCLE__SCHEDULER_ENABLED"] == "true"
    assert "${POSTGRES_PASSWORD:?" in environment["ENGRAM_DATABASE_URL"]


def test_the_dockerfile_passes_hadolint_and_runs_as_non_root():
    hadolint = Path(sys.executable).parent / "hadolint"
    result = subprocess.run(
        [hadolint, "--failure-threshold", "info", ROOT / "Dockerfile"], capture_output=True, text=True
    )
    assert result.returncode == 0, result.stdout + result.stderr
    dockerfile = (ROOT / "Dockerfile").read_text()
    assert sum(line.startswith("FROM ") for line in dockerfile.splitlines()) == 2  # multi-stage
    final_stage = dockerfile.rsplit("\nFROM ", 1)[1]
    assert "USER 10001" in final_stage and "pip install" not in final_stage
