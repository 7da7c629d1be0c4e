-- A newer memory that may have replaced this one: the rules saw a change they could not be sure
-- of (or a judge said "may update"), so both stay active; search ranks this one below the newer
-- one and `current_only` leaves it out, until an agent settles it (`replaces`) or the newer one is
-- forgotten (the mark is lifted). Purging the newer one lifts it too.
ALTER TABLE {{schema}}.memories
    ADD COLUMN newer_id uuid REFERENCES {{schema}}.memories (id) ON DELETE SET NULL;
CREATE INDEX memories_newer ON {{schema}}.memories (newer_id) WHERE newer_id IS NOT NULL;

ALTER TABLE {{schema}}.memory_history DROP CONSTRAINT memory_history_event_check;
ALTER TABLE {{schema}}.memory_history ADD CONSTRAINT memory_history_event_check CHECK (event IN (
    'written', 'updated', 'touched', 'merged', 'superseded', 'derived', 'forgotten', 'restored', 'purged',
    'pinned', 'unpinned', 'marked', 'unmarked'));
