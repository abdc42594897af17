-- A video's shareable rendition (issue 32): its duration, read by ffprobe,
-- beside the display size the job already records (for a video, the size
-- as shown, after its rotation).
ALTER TABLE rendition_jobs ADD COLUMN duration_ms INTEGER;
