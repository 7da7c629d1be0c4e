"""The engram Kubernetes operator (MemoryTenant -> schema, role, key, Deployment, Service).

Built so far: configuration, placement, provisioning on PostgreSQL and the child manifests.
Not yet: the Kopf handlers (so `python -m engram_operator` exits with a message saying so).
Kept in its own package, never named `operator` (that would shadow the standard library).
"""
