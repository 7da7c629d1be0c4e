"""The embedding models that ship inside engram's packages, and the size of their vectors (the
operator sizes a tenant's schema from it without loading a model)."""

BUNDLED_DIMENSIONS = {"use-multilingual-v3": 512, "multilingual-e5-small": 384}
