-- One tenant's memories, their history and its API keys.
CREATE TABLE {{schema}}.meta (
    singleton       boolean PRIMARY KEY DEFAULT true CHECK (singleton),
    tenant          text NOT NULL,
    embedding_model text NOT NULL,
    embedding_dim   integer NOT NULL CHECK (embedding_dim > 0),
    created_at      timestamptz NOT NULL DEFAULT now()
);

CREATE TABLE {{schema}}.api_keys (
    id         uuid PRIMARY KEY DEFAULT gen_random_uuid(),
    key_hash   text NOT NULL UNIQUE,
    created_at timestamptz NOT NULL DEFAULT now(),
    revoked_at timestamptz
);

CREATE TABLE {{schema}}.memories (
    id               uuid PRIMARY KEY DEFAULT gen_random_uuid(),
    content          text NOT NULL CHECK (length(content) > 0),
    type             text NOT NULL CHECK (type IN ('fact', 'preference', 'event', 'task')),
    layer            text NOT NULL CHECK (layer IN ('long_term', 'session', 'task')),
    source           text,
    external_id      text,
    importance       real NOT NULL DEFAULT 0.5 CHECK (importance >= 0 AND importance <= 1),
    language         text NOT NULL,
    created_at       timestamptz NOT NULL DEFAULT now(),
    updated_at       timestamptz NOT NULL DEFAULT now(),
    occurred_at      timestamptz,
    last_accessed_at timestamptz,
    access_count     integer NOT NULL DEFAULT 0 CHECK (access_count >= 0),
    status           text NOT NULL DEFAULT 'active' CHECK (status IN ('active', 'superseded', 'forgotten')),
    superseded_by    uuid REFERENCES {{schema}}.memories (id) ON DELETE SET NULL,
    session_id       text,
    task_id          text,
    tags             text[] NOT NULL DEFAULT '{}',
    metadata         jsonb NOT NULL DEFAULT '{}',
    -- exact-duplicate key: hash of (layer, session/task, normalised content)
    dedup_key        text NOT NULL,
    -- identifiers found in the content (order numbers, codes, emails...) for the rule channel
    identifiers      text[] NOT NULL DEFAULT '{}',
    -- application-tokenised content (CJK bigrams, words, identifiers) for the keyword channel
    search_tokens    tsvector NOT NULL,
    embedding        vector({{dim}}) NOT NULL,
    embedding_model  text NOT NULL
);

-- Exact duplicates are rejected by the database itself, whatever the number of writers.
CREATE UNIQUE INDEX memories_dedup_active ON {{schema}}.memories (dedup_key) WHERE status = 'active';
CREATE INDEX memories_embedding_hnsw ON {{schema}}.memories USING hnsw (embedding vector_cosine_ops);
CREATE INDEX memories_search_tokens ON {{schema}}.memories USING gin (search_tokens);
CREATE INDEX memories_identifiers ON {{schema}}.memories USING gin (identifiers);
CREATE INDEX memories_listing ON {{schema}}.memories (created_at DESC, id DESC);
CREATE INDEX memories_external_id ON {{schema}}.memories (external_id) WHERE external_id IS NOT NULL;
CREATE INDEX memories_session ON {{schema}}.memories (session_id) WHERE session_id IS NOT NULL;
CREATE INDEX memories_task ON {{schema}}.memories (task_id) WHERE task_id IS NOT NULL;

-- Append-only: no foreign key, so the record of a purge outlives the memory.
CREATE TABLE {{schema}}.memory_history (
    id        bigserial PRIMARY KEY,
    memory_id uuid NOT NULL,
    event     text NOT NULL
              CHECK (event IN ('written', 'updated', 'merged', 'superseded', 'forgotten', 'restored', 'purged')),
    at        timestamptz NOT NULL DEFAULT now(),
    actor     text,
    content   text,
    details   jsonb NOT NULL DEFAULT '{}'
);
CREATE INDEX memory_history_memory ON {{schema}}.memory_history (memory_id, id);
