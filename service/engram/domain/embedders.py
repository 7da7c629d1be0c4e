"""The embedding models that ship inside engram's packages, and the size of their vectors (the
operator sizes a tenant's schema from it without loading a model); the second vector channel."""

from __future__ import annotations

from pydantic import BaseModel, Field, StrictBool

BUNDLED_DIMENSIONS = {"use-multilingual-v3": 512, "multilingual-e5-small": 384}

# The second vector channel's model: a retrieval model (question -> statement), where the default
# embedder is a similarity model. Its vectors are computed after a write is acknowledged
# (services/retrieval.py) into a column of its own size (migration tenant/0013).
RETRIEVAL_MODEL = "multilingual-e5-small"


def retrieval_channel(tenant_model: str, chosen: bool | None, service_default: bool) -> bool:
    """Whether a tenant's memories get the second vector: its own choice, else the service's; never
    when its first model is the retrieval model already (the channel would repeat it)."""
    return tenant_model != RETRIEVAL_MODEL and (service_default if chosen is None else chosen)


class RetrievalChoice(BaseModel):
    """A tenant's choice of the second vector channel."""

    enabled: StrictBool | None = Field(
        description="true or false decides for this tenant; null follows the service (ENGRAM_RETRIEVAL_CHANNEL)"
    )


class RetrievalStatus(BaseModel):
    """The second vector channel of one tenant: whether it is on, and how far behind the writes."""

    model: str = Field(description="the retrieval model whose vectors the channel compares")
    enabled: bool = Field(description="on for this tenant: its memories get second vectors, searches use them")
    chosen: bool | None = Field(description="the tenant's own choice; null: the service's default")
    pending: int = Field(description="memories still waiting for their second vector (findable meanwhile)")
    lag_seconds: float = Field(description="how long the oldest of them has waited (0: none waits)")
