-- End users inside a tenant. A memory may belong to one user of the tenant (user_id) and record
-- the agent that wrote it (agent_id); without a user it is the tenant's, shared by all its users.
-- Writes never merge, supersede or touch across users: the owner (coalesce(user_id, ''); a user
-- id is never empty) is part of every lifecycle lookup, and indexed so one user's memories are
-- found without reading the others'.
ALTER TABLE {{schema}}.memories ADD COLUMN user_id text, ADD COLUMN agent_id text;
CREATE INDEX memories_owner ON {{schema}}.memories ((coalesce(user_id, '')), created_at DESC, id DESC);
DROP INDEX IF EXISTS {{schema}}.memories_slot_newest;
CREATE INDEX memories_slot_newest ON {{schema}}.memories (slot, layer, (coalesce(user_id, '')), created_at DESC)
    WHERE status = 'active' AND kind = 'fact' AND slot IS NOT NULL;
-- A key bound to a user reaches that user's memories (and reads the tenant's shared ones) only.
ALTER TABLE {{schema}}.api_keys ADD COLUMN user_id text;
