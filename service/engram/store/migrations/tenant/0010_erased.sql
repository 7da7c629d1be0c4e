-- What was erased stays erased: an import of an export taken before (same ids) or of the same
-- source again (same external ids) skips it. Ids and hashes only, never a text.
CREATE TABLE {{schema}}.erased (
    memory_id    uuid PRIMARY KEY,
    dedup_key    text NOT NULL,
    external_key text,
    erased_at    timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX erased_external ON {{schema}}.erased (external_key) WHERE external_key IS NOT NULL;
