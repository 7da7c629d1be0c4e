-- Tenants deleted through the admin API or `engram tenant delete`: the name and when, so asking
-- again answers with the first receipt's time (an erasure is idempotent); no content is kept.
CREATE TABLE IF NOT EXISTS {{schema}}.erased_tenants (
    name      text PRIMARY KEY,
    erased_at timestamptz NOT NULL DEFAULT now()
);
