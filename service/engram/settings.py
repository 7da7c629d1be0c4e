"""One settings object, read from ``ENGRAM_*`` environment variables, built once and passed down."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Annotated, Literal

from pydantic import BaseModel, Field, SecretStr, model_validator
from pydantic_settings import BaseSettings, SettingsConfigDict

from engram.domain.fusion import Weights
from engram.domain.lifecycle import DecayWeights
from engram.domain.models import MAX_BATCH_CEILING, Layer
from engram.domain.tenancy import KEY_PREFIX

Environment = Literal["test", "prod"]


class RetrievalSettings(BaseModel):
    """Hybrid search knobs (the formula is in engram/domain/fusion.py)."""

    # How much full evidence of each channel is worth alone, 0..1 (the channels are combined as a
    # noisy OR). Chosen by `engram eval --grid --split dev` (docs/benchmarks.md).
    vector_weight: float = Field(0.3, ge=0, le=1)
    # The second vector channel (the retrieval model's vectors, where a memory has one yet).
    retrieval_weight: float = Field(1.0, ge=0, le=1)
    keyword_weight: float = Field(0.4, ge=0, le=1)
    # A long memory keeps (48 / its distinct tokens) ^ this of its keyword evidence (domain/keyword.py).
    keyword_length_exponent: float = Field(1.0, ge=0, le=2)
    rule_weight: float = Field(0.9, ge=0, le=1)
    candidates: int = Field(20, ge=1, le=200, description="candidates per channel")
    default_top_k: int = Field(5, ge=1)
    max_top_k: int = Field(50, ge=1)
    hnsw_ef_search: int = Field(64, ge=10, le=1000)
    # A hit needs evidence (a shared word or identifier, or a centred cosine above the embedding
    # model's noise level); beyond that the best top_k come back with their scores and the caller
    # judges. No floor or cut by default: either can starve a question whose answer is stored.
    cut_ratio: float = Field(0.0, ge=0, le=1, description="drop hits under this share of the best score")
    min_score: float = Field(0.0, ge=0, le=1, description="an absolute floor, for callers who want one")
    # With an LLM configured: long or conversational queries are rewritten into a search query.
    rewrite: bool = True
    # "last week", "五月", "上次" in a query select memories of that time (off: they are plain words).
    understand_time: bool = True
    outside_window: float = Field(0.5, ge=0, le=1, description="share of its score a memory of another time keeps")
    # "上次", "last time": the latest of the hits scoring within this share of the best comes first.
    recent_ratio: float = Field(0.7, ge=0, le=1)
    # Neighbours in the same conversation (session_id, write order) lend a hit context.
    context_weight: float = Field(0.3, ge=0, le=1, description="0 turns conversation context off")
    context_radius: int = Field(2, ge=1, le=10, description="neighbours on each side")
    context_anchors: int = Field(3, ge=1, le=200, description="top fused hits that lend context")

    @model_validator(mode="after")
    def _some_weight(self) -> RetrievalSettings:
        if self.vector_weight + self.retrieval_weight + self.keyword_weight + self.rule_weight <= 0:
            raise ValueError("at least one retrieval weight must be positive")
        if self.default_top_k > self.max_top_k:
            raise ValueError("default_top_k must not exceed max_top_k")
        return self

    def weights(self) -> Weights:
        return Weights(
            vector=self.vector_weight,
            retrieval=self.retrieval_weight,
            keyword=self.keyword_weight,
            rule=self.rule_weight,
            context=self.context_weight,
        )


class LLMSettings(BaseModel):
    """The judge's language model (any litellm model name); unset = rule judge only."""

    model: str | None = None
    api_base: str | None = None
    api_key: SecretStr | None = None
    timeout_seconds: float = Field(10.0, gt=0)
    retries: int = Field(1, ge=0, le=5)


class LifecycleSettings(BaseModel):
    """Dedup thresholds, layers' lifetimes, forgetting and consolidation."""

    # Cosine thresholds for near-duplicates; unset = the calibrated values of the embedding model.
    touch_threshold: float | None = Field(None, ge=0, le=1)
    judge_threshold: float | None = Field(None, ge=0, le=1)
    decay: DecayWeights = DecayWeights()
    forget_threshold: float = Field(0.0, description="active memories whose decay score is below are candidates")
    unaccessed_days: int = Field(60, ge=1, description="never recalled and older than this: candidate")
    retention_days: int = Field(30, ge=0, description="forgotten memories are purged after this")
    session_ttl_hours: float = Field(24, gt=0)
    task_ttl_days: float = Field(7, gt=0)
    # Preference of each layer when search blends them (multiplies the fused score), 0..1.
    layer_weights: dict[Layer, Annotated[float, Field(ge=0, le=1)]] = {
        Layer.long_term: 1.0,
        Layer.session: 0.9,
        Layer.task: 0.9,
    }
    scheduler_enabled: bool = True
    # Forgetting and consolidation run weekly per tenant (the last run is kept in the database).
    scheduler_interval_seconds: float = Field(7 * 24 * 3600, gt=0)


def default_state_dir() -> Path:
    """One place per user whatever the working directory, so `make run`, `engram mcp` started by a
    desktop agent and every other command share one embedded database: /var/lib/engram as root
    (the embedded server's unprivileged user can reach it), else the XDG data directory."""
    if os.geteuid() == 0:
        return Path("/var/lib/engram")
    return Path(os.environ.get("XDG_DATA_HOME") or Path.home() / ".local" / "share") / "engram"


class Settings(BaseSettings):
    model_config = SettingsConfigDict(env_prefix="ENGRAM_", env_nested_delimiter="__", extra="ignore", frozen=True)

    # Where the database is. Unset: an embedded PostgreSQL under state_dir is started.
    database_url: SecretStr | None = None
    state_dir: Path = Field(default_factory=lambda: default_state_dir())
    environment: Environment = "test"
    # Single-tenant mode (one Deployment per tenant on Kubernetes): only this tenant is served.
    tenant: str | None = None
    # The admin API (/admin/v1: create, list, re-key, delete tenants) takes this key; unset, it is off.
    admin_key: SecretStr | None = None

    log_level: Literal["debug", "info", "warning", "error"] = "info"
    # auto: readable lines for a person at a terminal, JSON lines for a collector (not a TTY)
    log_format: Literal["auto", "json", "plain"] = "auto"
    # /metrics (Prometheus); its labels name the tenants, so with metrics_key set it answers only
    # 'Authorization: Bearer <metrics_key>'.
    metrics_enabled: bool = True
    metrics_key: SecretStr | None = None

    host: str = "127.0.0.1"
    port: int = Field(8080, ge=0, le=65535)
    public_url: str | None = Field(None, description="base URL printed in MCP URLs")
    # Host headers the MCP transports accept (DNS-rebinding protection); "*" admits any.
    allowed_hosts: list[str] = ["127.0.0.1:*", "localhost:*", "[::1]:*"]

    embedding_model: str = "use-multilingual-v3"
    embedding_api_base: str | None = None
    embedding_api_key: SecretStr | None = None
    # The second vector channel: every memory also gets a vector of the bundled retrieval model, in
    # the background (services/retrieval.py). Off for small machines; a tenant may choose either way.
    retrieval_channel: bool = True

    redis_url: str | None = None
    cache_ttl_seconds: int = Field(3600, ge=1)
    cache_max_items: int = Field(10_000, ge=0)

    pool_min_size: int = Field(1, ge=0)
    pool_max_size: int = Field(10, ge=1)

    retrieval: RetrievalSettings = RetrievalSettings()
    llm: LLMSettings = LLMSettings()
    lifecycle: LifecycleSettings = LifecycleSettings()
    max_batch_size: int = Field(500, ge=1, le=MAX_BATCH_CEILING)
    max_content_chars: int = Field(8000, ge=1)
    # Request bodies over this are refused (413) before they are read or any key is checked: a
    # batch or an MCP message up to max_body_bytes, any other REST request up to max_request_bytes.
    max_body_bytes: int = Field(4 * 1024 * 1024, ge=1024)
    max_request_bytes: int = Field(512 * 1024, ge=1024)
    max_import_bytes: int = Field(1024**3, ge=1024, description="a REST import's body, read as it streams")
    # At the connection (api/server.py): a request's line and headers, the time they may take to
    # arrive, how long a body may stall or a response go untaken, how many connections at once.
    max_header_bytes: int = Field(64 * 1024, ge=1024)
    header_timeout_seconds: float = Field(15, gt=0)
    idle_timeout_seconds: float = Field(30, gt=0)
    max_connections: int = Field(2048, ge=1, description="beyond, new requests are answered 503")
    # Each tenant's share of the intake: request bytes per second (a burst of max_body_bytes);
    # beyond, its requests wait their turn, or get 429 with more than a few seconds to wait.
    tenant_intake_bytes_per_second: int = Field(4 * 1024 * 1024, ge=1024)

    @model_validator(mode="after")
    def _admin_key_apart(self) -> Settings:
        key = self.admin_key.get_secret_value() if self.admin_key is not None else None
        if key is not None and (len(key) < 32 or key.startswith(KEY_PREFIX + ".")):
            raise ValueError("admin_key must be a secret of its own, 32 characters or more (never a tenant key)")
        return self

    def base_url(self) -> str:
        return (self.public_url or f"http://{self.host}:{self.port}").rstrip("/")
