from pathlib import Path

import pytest
from pydantic import ValidationError

from engram.settings import RetrievalSettings, Settings


def test_weights_come_from_environment(monkeypatch):
    monkeypatch.setenv("ENGRAM_RETRIEVAL__VECTOR_WEIGHT", "0.7")
    monkeypatch.setenv("ENGRAM_RETRIEVAL__MAX_TOP_K", "20")
    settings = Settings()
    assert settings.retrieval.vector_weight == 0.7
    assert settings.retrieval.max_top_k == 20


def test_all_zero_weights_are_rejected():
    with pytest.raises(ValidationError):
        RetrievalSettings(vector_weight=0, keyword_weight=0, rule_weight=0)


def test_unknown_environment_is_rejected(monkeypatch):
    monkeypatch.setenv("ENGRAM_ENVIRONMENT", "staging")
    with pytest.raises(ValidationError):
        Settings()


def test_embedded_postgres_paths_are_absolute(tmp_path, monkeypatch):
    from engram.store.embedded import EmbeddedPostgres

    monkeypatch.chdir(tmp_path)
    assert EmbeddedPostgres(Path(".state/postgres")).data_dir == tmp_path / ".state" / "postgres" / "data"
