-- A video's shareable rendition (PostgreSQL dialect; see
-- migrations/sqlite/0046_videos.sql).
ALTER TABLE rendition_jobs ADD COLUMN duration_ms BIGINT;
