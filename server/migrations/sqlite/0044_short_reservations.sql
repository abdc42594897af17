-- Reservations and sessions that cannot hold an event (issue 28).
-- `attempts.reserved_until`: an authorized attempt's bytes count against the
-- session's and the event's quotas only while a URL of it can still land
-- bytes (its URL's expiry and the PUT grace); a renew, a part signing or
-- bytes received move it on. Rows made before have none and count until
-- their expiry, as before.
-- `sessions.client_key`: the address a session was opened from (an IPv6
-- address by its /64), so that one address may open only its share of an
-- event's sessions.
ALTER TABLE attempts ADD COLUMN reserved_until INTEGER;
ALTER TABLE sessions ADD COLUMN client_key TEXT;
