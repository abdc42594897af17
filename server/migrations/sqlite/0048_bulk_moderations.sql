-- "Approve all waiting" at a festival's size (issue 48): one request, which
-- the server carries out in batches. The row is the operation's progress;
-- an instance that stops mid-way leaves it `running`, and the next sweep of
-- any instance takes it up once its claim has lapsed. Each batch reads what
-- is still pending (and confirmed by the host's view, `upto_seq`), so a
-- batch done twice decides nothing twice.
CREATE TABLE bulk_moderations (
    id            TEXT    PRIMARY KEY,
    event_id      INTEGER NOT NULL REFERENCES events(id),
    decision      TEXT    NOT NULL CHECK (decision IN ('approve', 'reject')),
    upto_seq      INTEGER NOT NULL,
    total         INTEGER NOT NULL,
    done          INTEGER NOT NULL DEFAULT 0,
    state         TEXT    NOT NULL CHECK (state IN ('running', 'done')),
    created_at    INTEGER NOT NULL,
    claimed_until INTEGER NOT NULL
);
CREATE INDEX bulk_moderations_running ON bulk_moderations (state, claimed_until);
