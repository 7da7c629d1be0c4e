-- The tenant's retention (domain/retention.py): lifetimes per layer and type, the purge delay.
-- Empty: the service's defaults, as before.
ALTER TABLE {{schema}}.meta ADD COLUMN IF NOT EXISTS retention jsonb NOT NULL DEFAULT '{}';
