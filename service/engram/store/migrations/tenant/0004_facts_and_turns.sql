-- Trustworthy recall. kind: a fact (deduplicated, merged, superseded) or a transcript turn (kept
-- verbatim; only an identical line of the same conversation is a duplicate). slot: who + which
-- attribute a fact is about ("user|residence"), so a change finds every statement of the old
-- value. pinned: never forgotten by the schedule. mentions: how often the fact was stated.
-- reinforced_at: when it was last stated, returned to an agent or restored (the forgetting clock).
ALTER TABLE {{schema}}.memories
    ADD COLUMN kind text NOT NULL DEFAULT 'fact' CHECK (kind IN ('fact', 'turn')),
    ADD COLUMN slot text,
    ADD COLUMN pinned boolean NOT NULL DEFAULT false,
    ADD COLUMN mentions integer NOT NULL DEFAULT 1 CHECK (mentions >= 1),
    ADD COLUMN reinforced_at timestamptz;
UPDATE {{schema}}.memories SET reinforced_at = coalesce(last_accessed_at, created_at);
ALTER TABLE {{schema}}.memories
    ALTER COLUMN reinforced_at SET NOT NULL,
    ALTER COLUMN reinforced_at SET DEFAULT now();
CREATE INDEX memories_slot ON {{schema}}.memories (slot) WHERE status = 'active' AND slot IS NOT NULL;

ALTER TABLE {{schema}}.memory_history DROP CONSTRAINT memory_history_event_check;
ALTER TABLE {{schema}}.memory_history ADD CONSTRAINT memory_history_event_check CHECK (event IN (
    'written', 'updated', 'touched', 'merged', 'superseded', 'derived', 'forgotten', 'restored', 'purged',
    'pinned', 'unpinned'));

-- When the scheduled forgetting last ran for this tenant, so a weekly job survives restarts.
ALTER TABLE {{schema}}.meta ADD COLUMN lifecycle_ran_at timestamptz;
