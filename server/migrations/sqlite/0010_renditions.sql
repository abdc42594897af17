-- Rendition jobs (issue 17): one per media record, made by a scan for media
-- without one. `due_at` is when a queued job may run, or when a running
-- job's lease ends (a job whose worker died is claimed again after it);
-- `tries` counts the claims and fences a late finish of an earlier one.
-- `done`: both renditions are stored (width/height: the display size);
-- `placeholder`: there is none, and `reason` says why. Numbered 10, not 4,
-- so that branches adding migrations at the same time do not take the
-- same version.
CREATE TABLE rendition_jobs (
    media_id     TEXT    PRIMARY KEY REFERENCES media(id),
    state        TEXT    NOT NULL CHECK (state IN ('queued', 'running', 'done', 'placeholder')),
    tries        INTEGER NOT NULL DEFAULT 0,
    due_at       INTEGER NOT NULL,
    reason       TEXT,
    width        INTEGER,
    height       INTEGER,
    created_at   INTEGER NOT NULL,
    finished_at  INTEGER
);
CREATE INDEX rendition_jobs_due ON rendition_jobs (state, due_at);
