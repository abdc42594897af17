-- The host removes a guest (PostgreSQL dialect; see
-- migrations/sqlite/0045_revocations.sql).
ALTER TABLE sessions ADD COLUMN revoked_at BIGINT;
CREATE TABLE event_blocks (
    event_id    BIGINT  NOT NULL REFERENCES events(id),
    client_key  TEXT    NOT NULL,
    created_at  BIGINT  NOT NULL,
    PRIMARY KEY (event_id, client_key)
);
