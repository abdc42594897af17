-- Objects deleted once more after a delay (issue 15). When an event is
-- deleted, its rows go at once, but a signed PUT URL handed out before (S3:
-- up to --url-ttl old) can still land an object, and a rendition worker
-- already running can still write one. Each attempt's object key is kept
-- here until `not_before` (the last URL's expiry, and a margin); the
-- sweeper then deletes the object and its renditions again, unless the key
-- belongs to an attempt again, and forgets the row.
CREATE TABLE late_deletes (
    object_key  TEXT    NOT NULL PRIMARY KEY,
    not_before  INTEGER NOT NULL
);
CREATE INDEX late_deletes_due ON late_deletes (not_before);
