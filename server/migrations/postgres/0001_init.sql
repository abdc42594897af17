-- upload-once schema, version 1 (PostgreSQL dialect). Same tables, columns
-- and constraints as migrations/sqlite/0001_init.sql; ids are BIGINT
-- identities, UUIDs stay TEXT like in SQLite, and wall positions come from
-- a sequence.
CREATE TABLE events (
    id              BIGINT  GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    slug            TEXT    NOT NULL UNIQUE,
    title           TEXT    NOT NULL,
    max_file_bytes  BIGINT  NOT NULL,
    allowed_types   TEXT    NOT NULL,          -- JSON array of patterns
    moderation      TEXT    NOT NULL CHECK (moderation IN ('required', 'none')),
    guest_code      TEXT    NOT NULL,
    host_token_hash TEXT    NOT NULL UNIQUE,
    wall_token_hash TEXT    NOT NULL UNIQUE,
    created_at      BIGINT  NOT NULL
);

CREATE TABLE sessions (
    id          BIGINT  GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    event_id    BIGINT  NOT NULL REFERENCES events(id),
    token_hash  TEXT    NOT NULL UNIQUE,
    created_at  BIGINT  NOT NULL,
    expires_at  BIGINT  NOT NULL
);

CREATE TABLE attempts (
    row_id          BIGINT  GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    id              TEXT    NOT NULL,           -- client-minted UUID
    session_id      BIGINT  NOT NULL REFERENCES sessions(id),
    event_id        BIGINT  NOT NULL REFERENCES events(id),
    filename        TEXT    NOT NULL,
    size            BIGINT  NOT NULL,
    content_type    TEXT    NOT NULL,
    sha256          TEXT,
    object_key      TEXT    NOT NULL UNIQUE,
    state           TEXT    NOT NULL CHECK (state IN ('authorized', 'confirmed', 'expired', 'rejected')),
    reject_code     TEXT,
    reject_reason   TEXT,
    created_at      BIGINT  NOT NULL,
    expires_at      BIGINT  NOT NULL,
    object_deleted  BOOLEAN NOT NULL DEFAULT FALSE,
    UNIQUE (session_id, id)
);
CREATE INDEX attempts_expiry ON attempts (state, expires_at);

-- Wall positions. Taken only under the wall advisory lock, held to commit,
-- so positions become visible in the order they were handed out and a wall
-- cursor never skips an item.
CREATE SEQUENCE media_wall_seq;

CREATE TABLE media (
    id                TEXT    PRIMARY KEY,      -- server-minted UUID
    attempt_row_id    BIGINT  NOT NULL UNIQUE REFERENCES attempts(row_id),  -- one media per attempt, enforced
    event_id          BIGINT  NOT NULL REFERENCES events(id),
    object_key        TEXT    NOT NULL UNIQUE,
    size              BIGINT  NOT NULL,
    content_type      TEXT    NOT NULL,
    sha256            TEXT,
    moderation        TEXT    NOT NULL CHECK (moderation IN ('pending', 'approved', 'rejected')),
    moderation_reason TEXT,
    wall_seq          BIGINT  UNIQUE,
    created_at        BIGINT  NOT NULL,
    moderated_at      BIGINT
);
CREATE INDEX media_event ON media (event_id, created_at);
CREATE INDEX media_wall ON media (event_id, wall_seq);
