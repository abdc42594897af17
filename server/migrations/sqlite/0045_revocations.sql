-- The host removes a guest (issue 28): `sessions.revoked_at` ends a guest
-- session (its token opens nothing more, its uploads not yet saved are
-- rejected); `event_blocks` holds the client addresses (an IPv6 address by
-- its /64) the host shut out of an event: no session is opened from them.
ALTER TABLE sessions ADD COLUMN revoked_at INTEGER;
CREATE TABLE event_blocks (
    event_id    INTEGER NOT NULL REFERENCES events(id),
    client_key  TEXT    NOT NULL,
    created_at  INTEGER NOT NULL,
    PRIMARY KEY (event_id, client_key)
);
