-- The control schema: which environment this database serves, and which tenants it holds.
CREATE TABLE IF NOT EXISTS {{schema}}.instance (
    singleton   boolean PRIMARY KEY DEFAULT true CHECK (singleton),
    environment text NOT NULL CHECK (environment IN ('test', 'prod')),
    labelled_at timestamptz NOT NULL DEFAULT now()
);

CREATE TABLE IF NOT EXISTS {{schema}}.tenants (
    name        text PRIMARY KEY,
    schema_name text NOT NULL UNIQUE,
    created_at  timestamptz NOT NULL DEFAULT now()
);
