"""The engram Kubernetes operator: a MemoryTenant becomes a schema, a role, a key and a service.

Run it with `python -m engram_operator`. Kept in its own package, never named `operator` (that
would shadow the standard library).
"""
