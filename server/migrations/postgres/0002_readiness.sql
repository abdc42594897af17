-- The readiness check's write probe: one row, rewritten by each probe, so
-- "ready" means "takes writes", not only "answers".
CREATE TABLE readiness (
    id          BIGINT PRIMARY KEY CHECK (id = 1),
    checked_at  BIGINT NOT NULL
);
