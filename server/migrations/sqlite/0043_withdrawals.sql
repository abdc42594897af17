-- A guest withdraws an upload (issue 28, `DELETE /v1/attempts/{id}`): an
-- attempt not yet confirmed is rejected with `withdrawn`; a media record of
-- its own is taken down like a rejected one and removed at once
-- (`removed_at`, so the sweeper deletes its objects), and `withdrawn_at`
-- keeps it out of the host's list.
ALTER TABLE media ADD COLUMN withdrawn_at INTEGER;
