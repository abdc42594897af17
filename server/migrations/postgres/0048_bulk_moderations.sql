-- "Approve all waiting" at a festival's size (PostgreSQL dialect; see
-- migrations/sqlite/0048_bulk_moderations.sql).
CREATE TABLE bulk_moderations (
    id            TEXT    PRIMARY KEY,
    event_id      BIGINT  NOT NULL REFERENCES events(id),
    decision      TEXT    NOT NULL CHECK (decision IN ('approve', 'reject')),
    upto_seq      BIGINT  NOT NULL,
    total         BIGINT  NOT NULL,
    done          BIGINT  NOT NULL DEFAULT 0,
    state         TEXT    NOT NULL CHECK (state IN ('running', 'done')),
    created_at    BIGINT  NOT NULL,
    claimed_until BIGINT  NOT NULL
);
CREATE INDEX bulk_moderations_running ON bulk_moderations (state, claimed_until);
