-- upload-once schema, version 1 (SQLite dialect).
CREATE TABLE events (
    id              INTEGER PRIMARY KEY,
    slug            TEXT    NOT NULL UNIQUE,
    title           TEXT    NOT NULL,
    max_file_bytes  INTEGER NOT NULL,
    allowed_types   TEXT    NOT NULL,          -- JSON array of patterns
    moderation      TEXT    NOT NULL CHECK (moderation IN ('required', 'none')),
    guest_code      TEXT    NOT NULL,
    host_token_hash TEXT    NOT NULL UNIQUE,
    wall_token_hash TEXT    NOT NULL UNIQUE,
    created_at      INTEGER NOT NULL
);

CREATE TABLE sessions (
    id          INTEGER PRIMARY KEY,
    event_id    INTEGER NOT NULL REFERENCES events(id),
    token_hash  TEXT    NOT NULL UNIQUE,
    created_at  INTEGER NOT NULL,
    expires_at  INTEGER NOT NULL
);

CREATE TABLE attempts (
    row_id          INTEGER PRIMARY KEY,
    id              TEXT    NOT NULL,           -- client-minted UUID
    session_id      INTEGER NOT NULL REFERENCES sessions(id),
    event_id        INTEGER NOT NULL REFERENCES events(id),
    filename        TEXT    NOT NULL,
    size            INTEGER NOT NULL,
    content_type    TEXT    NOT NULL,
    sha256          TEXT,
    object_key      TEXT    NOT NULL UNIQUE,
    state           TEXT    NOT NULL CHECK (state IN ('authorized', 'confirmed', 'expired', 'rejected')),
    reject_code     TEXT,
    reject_reason   TEXT,
    created_at      INTEGER NOT NULL,
    expires_at      INTEGER NOT NULL,
    object_deleted  INTEGER NOT NULL DEFAULT 0,
    UNIQUE (session_id, id)
);
CREATE INDEX attempts_expiry ON attempts (state, expires_at);

CREATE TABLE media (
    id                TEXT    PRIMARY KEY,      -- server-minted UUID
    attempt_row_id    INTEGER NOT NULL UNIQUE REFERENCES attempts(row_id),  -- one media per attempt, enforced
    event_id          INTEGER NOT NULL REFERENCES events(id),
    object_key        TEXT    NOT NULL UNIQUE,
    size              INTEGER NOT NULL,
    content_type      TEXT    NOT NULL,
    sha256            TEXT,
    moderation        TEXT    NOT NULL CHECK (moderation IN ('pending', 'approved', 'rejected')),
    moderation_reason TEXT,
    wall_seq          INTEGER UNIQUE,
    created_at        INTEGER NOT NULL,
    moderated_at      INTEGER
);
CREATE INDEX media_event ON media (event_id, created_at);
CREATE INDEX media_wall ON media (event_id, wall_seq);
