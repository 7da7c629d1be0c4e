"""The engram Kubernetes operator (MemoryTenant -> schema, role, key, Deployment, Service).

Not built yet: it arrives with the platform issue. Running it says so and exits with code 2.
Kept in its own package, never named `operator` (that would shadow the standard library).
"""
