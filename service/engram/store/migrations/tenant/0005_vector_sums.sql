-- Per-language sums of the memories' vectors, kept by statement triggers: search centres vectors on
-- the tenant's language means, because what every memory of a language shares ("The user...",
-- "用户...") is not evidence that one of them answers a query. Kept for every memory, whatever
-- its status; `engram reindex` recomputes them for the new model.
CREATE TABLE {{schema}}.vector_sums (
    language text PRIMARY KEY,
    total    vector NOT NULL,
    count    bigint NOT NULL
);

CREATE FUNCTION {{schema}}.vector_sums_added() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    INSERT INTO {{schema}}.vector_sums AS s (language, total, count)
    SELECT n.language, sum(n.embedding), count(*) FROM new_rows n GROUP BY n.language
    ON CONFLICT (language) DO UPDATE SET total = s.total + excluded.total, count = s.count + excluded.count;
    RETURN NULL;
END $$;

CREATE FUNCTION {{schema}}.vector_sums_removed() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    UPDATE {{schema}}.vector_sums s SET total = s.total - o.total, count = s.count - o.count
    FROM (SELECT r.language, sum(r.embedding) AS total, count(*) AS count FROM old_rows r GROUP BY r.language) o
    WHERE s.language = o.language;
    RETURN NULL;
END $$;

-- Only rows whose vector or language changed count (an access count update changes neither); the
-- change of each language's sum is applied once ((v - v) - v is -v: pgvector has no unary minus).
CREATE FUNCTION {{schema}}.vector_sums_changed() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    INSERT INTO {{schema}}.vector_sums AS s (language, total, count)
    SELECT d.language, sum(d.v), sum(d.c) FROM (
        SELECT n.language, n.embedding AS v, 1 AS c FROM old_rows o JOIN new_rows n ON n.id = o.id
        WHERE o.language IS DISTINCT FROM n.language OR o.embedding IS DISTINCT FROM n.embedding
        UNION ALL
        SELECT o.language, (o.embedding - o.embedding) - o.embedding, -1 FROM old_rows o JOIN new_rows n ON n.id = o.id
        WHERE o.language IS DISTINCT FROM n.language OR o.embedding IS DISTINCT FROM n.embedding
    ) AS d GROUP BY d.language
    ON CONFLICT (language) DO UPDATE SET total = s.total + excluded.total, count = s.count + excluded.count;
    RETURN NULL;
END $$;

-- (Re)installs the triggers and recomputes the sums from the table; `engram reindex` calls it
-- after it swaps the vector column.
CREATE FUNCTION {{schema}}.track_vector_sums() RETURNS void LANGUAGE plpgsql AS $$
BEGIN
    DROP TRIGGER IF EXISTS vector_sums_insert ON {{schema}}.memories;
    DROP TRIGGER IF EXISTS vector_sums_delete ON {{schema}}.memories;
    DROP TRIGGER IF EXISTS vector_sums_update ON {{schema}}.memories;
    DELETE FROM {{schema}}.vector_sums;
    INSERT INTO {{schema}}.vector_sums (language, total, count)
    SELECT m.language, sum(m.embedding), count(*) FROM {{schema}}.memories m GROUP BY m.language;
    CREATE TRIGGER vector_sums_insert AFTER INSERT ON {{schema}}.memories
        REFERENCING NEW TABLE AS new_rows FOR EACH STATEMENT EXECUTE FUNCTION {{schema}}.vector_sums_added();
    CREATE TRIGGER vector_sums_delete AFTER DELETE ON {{schema}}.memories
        REFERENCING OLD TABLE AS old_rows FOR EACH STATEMENT EXECUTE FUNCTION {{schema}}.vector_sums_removed();
    CREATE TRIGGER vector_sums_update AFTER UPDATE ON {{schema}}.memories
        REFERENCING OLD TABLE AS old_rows NEW TABLE AS new_rows
        FOR EACH STATEMENT EXECUTE FUNCTION {{schema}}.vector_sums_changed();
END $$;

SELECT {{schema}}.track_vector_sums();
