-- Multipart uploads (large files go up in parts through the same attempt).
-- The plan is fixed at authorize (NULL: one PUT), so a later change of
-- --part-size or --multipart-threshold never alters an attempt's parts;
-- upload_id is the object store's multipart upload, made when the first
-- parts are signed.
ALTER TABLE attempts ADD COLUMN part_size INTEGER;
ALTER TABLE attempts ADD COLUMN part_count INTEGER;
ALTER TABLE attempts ADD COLUMN upload_id TEXT;

-- SHA-256 over the parts' digests, then `-` and the part count.
ALTER TABLE media ADD COLUMN composite_sha256 TEXT;

-- The SHA-256 each part's URLs were signed with: NULL once a part was
-- signed without one, or with two different ones. Only the object store's
-- own listing says which parts exist; this only keeps digests the store
-- cannot list.
CREATE TABLE part_digests (
    attempt_row_id  INTEGER NOT NULL REFERENCES attempts(row_id),
    number          INTEGER NOT NULL,
    sha256          TEXT,
    PRIMARY KEY (attempt_row_id, number)
);
