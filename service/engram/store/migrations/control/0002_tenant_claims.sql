-- Who created a tenant: NULL for `engram tenant create`, "k8s:<namespace>/<name>" for the operator.
-- A MemoryTenant of the same name from another namespace is refused instead of sharing the schema.
ALTER TABLE {{schema}}.tenants ADD COLUMN IF NOT EXISTS claimed_by text;
