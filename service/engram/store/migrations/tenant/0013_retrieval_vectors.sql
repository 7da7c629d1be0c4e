-- The second vector channel (services/retrieval.py): every memory's vector of the bundled retrieval
-- model (multilingual-e5-small, 384 dimensions, domain/embedders.py RETRIEVAL_MODEL), computed in
-- the background after the write is acknowledged. NULL: not computed yet; the partial index is the
-- queue, oldest first, so it survives restarts and crashes with the rows themselves.
ALTER TABLE {{schema}}.memories ADD COLUMN IF NOT EXISTS retrieval_embedding vector(384);
CREATE INDEX IF NOT EXISTS memories_retrieval_hnsw ON {{schema}}.memories
    USING hnsw (retrieval_embedding vector_cosine_ops);
CREATE INDEX IF NOT EXISTS memories_retrieval_pending ON {{schema}}.memories (created_at, id)
    WHERE retrieval_embedding IS NULL;

-- A new content needs a new vector, whichever statement changed it (an update, a merge, an import
-- over an existing row): the old one goes back to the queue, unless the statement sets both.
CREATE FUNCTION {{schema}}.retrieval_requeue() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    IF NEW.content IS DISTINCT FROM OLD.content
       AND NEW.retrieval_embedding IS NOT DISTINCT FROM OLD.retrieval_embedding THEN
        NEW.retrieval_embedding := NULL;
    END IF;
    RETURN NEW;
END $$;
CREATE TRIGGER retrieval_requeue BEFORE UPDATE OF content ON {{schema}}.memories
    FOR EACH ROW EXECUTE FUNCTION {{schema}}.retrieval_requeue();

-- Per-language sums of the second vectors, as vector_sums (0005) keeps for the first: the channel
-- centres its vectors on each language's mean too. Only rows that have one count.
CREATE TABLE IF NOT EXISTS {{schema}}.retrieval_sums (
    language text PRIMARY KEY,
    total    vector(384) NOT NULL,
    count    bigint NOT NULL
);

CREATE FUNCTION {{schema}}.retrieval_sums_added() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    INSERT INTO {{schema}}.retrieval_sums AS s (language, total, count)
    SELECT n.language, sum(n.retrieval_embedding), count(*) FROM new_rows n
    WHERE n.retrieval_embedding IS NOT NULL GROUP BY n.language
    ON CONFLICT (language) DO UPDATE SET total = s.total + excluded.total, count = s.count + excluded.count;
    RETURN NULL;
END $$;

CREATE FUNCTION {{schema}}.retrieval_sums_removed() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    UPDATE {{schema}}.retrieval_sums s SET total = s.total - o.total, count = s.count - o.count
    FROM (SELECT r.language, sum(r.retrieval_embedding) AS total, count(*) AS count FROM old_rows r
          WHERE r.retrieval_embedding IS NOT NULL GROUP BY r.language) o
    WHERE s.language = o.language;
    RETURN NULL;
END $$;

-- A row whose vector or language changed: its new vector (if any) is added, its old one (if any)
-- taken away ((v - v) - v is -v: pgvector has no unary minus).
CREATE FUNCTION {{schema}}.retrieval_sums_changed() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    INSERT INTO {{schema}}.retrieval_sums AS s (language, total, count)
    SELECT d.language, sum(d.v), sum(d.c) FROM (
        SELECT n.language, n.retrieval_embedding AS v, 1 AS c FROM old_rows o JOIN new_rows n ON n.id = o.id
        WHERE n.retrieval_embedding IS NOT NULL
          AND (o.language IS DISTINCT FROM n.language OR o.retrieval_embedding IS DISTINCT FROM n.retrieval_embedding)
        UNION ALL
        SELECT o.language, (o.retrieval_embedding - o.retrieval_embedding) - o.retrieval_embedding, -1
        FROM old_rows o JOIN new_rows n ON n.id = o.id
        WHERE o.retrieval_embedding IS NOT NULL
          AND (o.language IS DISTINCT FROM n.language OR o.retrieval_embedding IS DISTINCT FROM n.retrieval_embedding)
    ) AS d GROUP BY d.language
    ON CONFLICT (language) DO UPDATE SET total = s.total + excluded.total, count = s.count + excluded.count;
    RETURN NULL;
END $$;

CREATE TRIGGER retrieval_sums_insert AFTER INSERT ON {{schema}}.memories
    REFERENCING NEW TABLE AS new_rows FOR EACH STATEMENT EXECUTE FUNCTION {{schema}}.retrieval_sums_added();
CREATE TRIGGER retrieval_sums_delete AFTER DELETE ON {{schema}}.memories
    REFERENCING OLD TABLE AS old_rows FOR EACH STATEMENT EXECUTE FUNCTION {{schema}}.retrieval_sums_removed();
CREATE TRIGGER retrieval_sums_update AFTER UPDATE ON {{schema}}.memories
    REFERENCING OLD TABLE AS old_rows NEW TABLE AS new_rows
    FOR EACH STATEMENT EXECUTE FUNCTION {{schema}}.retrieval_sums_changed();

-- The tenant's choice: NULL follows the service (ENGRAM_RETRIEVAL_CHANNEL), true or false decides.
ALTER TABLE {{schema}}.meta ADD COLUMN IF NOT EXISTS retrieval_channel boolean;
