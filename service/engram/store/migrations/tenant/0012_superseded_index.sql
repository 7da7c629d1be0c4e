-- Deleting a memory (a purge, an erasure) checks who points at it through superseded_by (ON
-- DELETE SET NULL): without an index each check read the whole table, and erasing a user of
-- 10,000 memories among 30,000 took 40 s. Partial: most memories are not superseded.
CREATE INDEX IF NOT EXISTS memories_superseded_by ON {{schema}}.memories (superseded_by)
    WHERE superseded_by IS NOT NULL;
