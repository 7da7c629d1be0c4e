"""Static checks of the files a platform team applies (no Docker engine or cluster here)."""

from pathlib import Path

import yaml

ROOT = Path(__file__).resolve().parents[2]


def test_compose_uses_real_images_and_waits_for_healthy_services():
    compose = yaml.safe_load((ROOT / "docker-compose.yml").read_text())
    services = compose["services"]
    assert services["postgres"]["image"].startswith("pgvector/pgvector:pg1")
    assert services["redis"]["image"].startswith("redis:7")
    assert "--appendonly" in services["redis"]["command"]
    depends = services["engram"]["depends_on"]
    assert depends["postgres"]["condition"] == "service_healthy"
    assert depends["migrate"]["condition"] == "service_completed_successfully"
    for name in ("postgres", "redis"):
        assert "healthcheck" in services[name]
    assert "${POSTGRES_PASSWORD:?" in (ROOT / "docker-compose.yml").read_text()


def test_dockerfile_runs_as_non_root():
    dockerfile = (ROOT / "Dockerfile").read_text()
    assert dockerfile.count("FROM ") == 2 and "USER 10001" in dockerfile
