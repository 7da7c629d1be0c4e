-- A new fact's slot mates are the newest active facts of its slot and layer. Ordered that way in the
-- index, a slot holding thousands of them (an import, a bulk load) costs a write the few it reads,
-- not a sort of every one with its vector (60-240 ms for a slot of 7,500, measured).
DROP INDEX IF EXISTS {{schema}}.memories_slot;
CREATE INDEX memories_slot_newest ON {{schema}}.memories (slot, layer, created_at DESC)
    WHERE status = 'active' AND kind = 'fact' AND slot IS NOT NULL;
