-- pmgate correlation store, schema version 8: the live groups of one
-- principal, for its share of the capacity (CORRELATION_MAX_GROUPS_PER_KEY).
--
-- An admission under a share counts the principal's live (PENDING and
-- INFLIGHT) groups, at most its share of them, after taking an advisory lock
-- of that principal in the same transaction, so admissions of one key are
-- serialized and its share is decided exactly; the check before a tool turn
-- is sent reads the same count. This partial index makes that count read
-- only the key's live groups. It is maintained by an admission and by a
-- transition between or out of the live states; tombstones leave it.
--
-- Binaries of version 7 running beside version 8 do not know the share: their
-- admissions are decided on the pool alone, as before (looser for the key,
-- never for the pool), and they keep this index up to date like any other.
-- A count of the groups themselves, rather than a counter kept beside them,
-- cannot drift: every replica's writes keep it exact.
CREATE INDEX correlation_groups_live_principal ON correlation_groups (principal_id)
    WHERE state IN ('PENDING', 'INFLIGHT');
