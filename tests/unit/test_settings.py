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
        RetrievalSettings(vector_weight=0, retrieval_weight=0, keyword_weight=0, rule_weight=0)
    RetrievalSettings(vector_weight=0, retrieval_weight=0.5, keyword_weight=0, rule_weight=0)  # one is enough


def test_unknown_environment_is_rejected(monkeypatch):
    monkeypatch.setenv("ENGRAM_ENVIRONMENT", "staging")
    with pytest.raises(ValidationError):
        Settings()


def test_embedded_postgres_paths_are_absolute(tmp_path, monkeypatch):
    from engram.store.embedded import EmbeddedPostgres

    monkeypatch.chdir(tmp_path)
    assert EmbeddedPostgres(Path(".state/postgres")).data_dir == tmp_path / ".state" / "postgres" / "data"


def test_the_state_directory_does_not_depend_on_the_working_directory(tmp_path, monkeypatch):
    import engram.settings as settings_module

    monkeypatch.delenv("ENGRAM_STATE_DIR", raising=False)
    monkeypatch.chdir(tmp_path)
    monkeypatch.setattr(settings_module.os, "geteuid", lambda: 0)
    assert Settings().state_dir == Path("/var/lib/engram")
    monkeypatch.setattr(settings_module.os, "geteuid", lambda: 1000)
    monkeypatch.setenv("XDG_DATA_HOME", str(tmp_path / "data"))
    assert Settings().state_dir == tmp_path / "data" / "engram"
    monkeypatch.delenv("XDG_DATA_HOME")
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    assert Settings().state_dir == tmp_path / "home" / ".local" / "share" / "engram"
