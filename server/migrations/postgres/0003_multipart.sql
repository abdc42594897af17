-- Multipart uploads (PostgreSQL dialect; same columns as
-- migrations/sqlite/0003_multipart.sql). The plan is fixed at authorize
-- (NULL: one PUT); upload_id is the object store's multipart upload, made
-- when the first parts are signed.
ALTER TABLE attempts ADD COLUMN part_size BIGINT;
ALTER TABLE attempts ADD COLUMN part_count BIGINT;
ALTER TABLE attempts ADD COLUMN upload_id TEXT;

-- SHA-256 over the parts' digests, then `-` and the part count.
ALTER TABLE media ADD COLUMN composite_sha256 TEXT;

-- The SHA-256 each part's URLs were signed with: NULL once a part was
-- signed without one, or with two different ones.
CREATE TABLE part_digests (
    attempt_row_id  BIGINT  NOT NULL REFERENCES attempts(row_id),
    number          BIGINT  NOT NULL,
    sha256          TEXT,
    PRIMARY KEY (attempt_row_id, number)
);
