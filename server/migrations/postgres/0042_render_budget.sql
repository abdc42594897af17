-- A guest session's rendition budget (PostgreSQL dialect; see
-- migrations/sqlite/0042_render_budget.sql).
ALTER TABLE rendition_jobs ADD COLUMN pixels BIGINT;
ALTER TABLE rendition_jobs ADD COLUMN decoded_at BIGINT;
