-- A guest session's rendition budget (issue 28). `pixels` is the original's
-- size in pixels, read from its header when a worker first reads it;
-- `decoded_at` is when its decode began. The pixels decoded for one
-- session within the last window are the sum over its jobs whose decode
-- began in it; a job that would go over waits in the queue (its claim not
-- counted as a try).
ALTER TABLE rendition_jobs ADD COLUMN pixels INTEGER;
ALTER TABLE rendition_jobs ADD COLUMN decoded_at INTEGER;
