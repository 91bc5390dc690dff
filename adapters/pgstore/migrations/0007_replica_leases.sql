-- pmgate correlation store, schema version 7: leases of capacity held by a
-- replica, so that a reservation is made in the replica's memory.
--
-- Until version 6 a tool turn was two transactions: Reserve (take one unit
-- from a stripe's lease, insert a reservation row) and Admit (delete the
-- reservation row, insert the group and its call index rows). From version 7 a
-- replica holds leases of its own, one row per lane (id = replica id / lane),
-- each a few units of capacity already counted on the accounting row:
--
--   live_groups = PENDING + INFLIGHT groups + counted reservations
--                 + the stripes' free groups + the replicas' free groups
--
-- (the same for live_calls). Reserve takes a unit of a lease in the replica's
-- memory, with no statement; Admit is one statement that takes the unit off
-- the lease row (a conditional decrement: the row is the truth, not the
-- replica's memory) and inserts the group and its call index rows. A lease is
-- refilled from a stripe or from the accounting row once per few groups.
--
-- Near the limits a decision is still exact on the accounting row: it locks
-- the row, the stripes and every lease, takes back the stripes' free units,
-- every other replica's free units, and its own beyond the reservations it
-- holds in memory, and decides on the row (a reservation row, as before). A
-- replica whose lease was taken back finds its decrement refused and decides
-- its admission exactly instead. A replica that dies leaves its lease rows
-- behind: every exact decision takes their units back (so a dead replica's
-- lease never refuses a group), and deletes those past expires_at (renewed by
-- every admission and refill of the replica that owns them).
--
-- Replicas of version 6 running beside version 7 do not know this table:
-- they count its free units as used on the row (their exact decisions cannot
-- take them back), so they are stricter, never looser, and they never touch a
-- lease row. Their reservations, stripes and completions are unchanged, and
-- version 7 admits their reservations and takes back their stripes as before.
--
-- No CHECK constraint: every decrement is conditional on the units being
-- there, and a CHECK costs its expression's evaluation on every admission.
CREATE TABLE correlation_leases (
    id          text        PRIMARY KEY,
    free_groups bigint      NOT NULL,
    free_calls  bigint      NOT NULL,
    expires_at  timestamptz NOT NULL
);
