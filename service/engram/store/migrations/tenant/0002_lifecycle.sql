-- Lifecycle: more history events, when a memory was forgotten, links from derived memories.
ALTER TABLE {{schema}}.memory_history DROP CONSTRAINT memory_history_event_check;
ALTER TABLE {{schema}}.memory_history ADD CONSTRAINT memory_history_event_check CHECK (event IN (
    'written', 'updated', 'touched', 'merged', 'superseded', 'derived', 'forgotten', 'restored', 'purged'));

ALTER TABLE {{schema}}.memories ADD COLUMN forgotten_at timestamptz;
-- A derived (consolidated) memory lists the memories it was made from.
ALTER TABLE {{schema}}.memories ADD COLUMN derived_from uuid[] NOT NULL DEFAULT '{}';

CREATE INDEX memories_forgotten ON {{schema}}.memories (forgotten_at) WHERE status = 'forgotten';
