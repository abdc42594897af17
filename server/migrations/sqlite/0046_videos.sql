-- A video's shareable rendition (issue 32): its duration, read by ffprobe,
-- beside the display size the job already records (for a video, the size
-- as shown, after its rotation).
ALTER TABLE rendition_jobs ADD COLUMN duration_ms INTEGER;
-- Videos and HEIC photos that earlier versions gave the placeholder (a
-- video was served as uploaded; HEIC was not decoded) are made again.
UPDATE rendition_jobs SET state = 'queued', tries = 0, reason = NULL, due_at = 0
WHERE state = 'placeholder' AND media_id IN (
    SELECT id FROM media WHERE content_type LIKE 'video/%'
        OR content_type IN ('image/heic', 'image/heif', 'image/heic-sequence', 'image/heif-sequence'));
