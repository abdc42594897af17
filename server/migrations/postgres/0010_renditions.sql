-- Rendition jobs (PostgreSQL dialect; same columns as
-- migrations/sqlite/0010_renditions.sql, which says what each means).
CREATE TABLE rendition_jobs (
    media_id     TEXT    PRIMARY KEY REFERENCES media(id),
    state        TEXT    NOT NULL CHECK (state IN ('queued', 'running', 'done', 'placeholder')),
    tries        BIGINT  NOT NULL DEFAULT 0,
    due_at       BIGINT  NOT NULL,
    reason       TEXT,
    width        BIGINT,
    height       BIGINT,
    created_at   BIGINT  NOT NULL,
    finished_at  BIGINT
);
CREATE INDEX rendition_jobs_due ON rendition_jobs (state, due_at);
