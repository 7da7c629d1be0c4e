-- A counter every transaction that changes the tenant's memories bumps when it takes the write
-- lock (and a reindex when it switches models): a writer that decided outside the lock re-reads
-- what its decisions rest on only when the counter moved since it read them.
ALTER TABLE {{schema}}.meta ADD COLUMN generation bigint NOT NULL DEFAULT 0;
