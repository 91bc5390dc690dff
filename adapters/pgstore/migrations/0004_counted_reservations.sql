-- pmgate correlation store, schema version 4: reservations are counted on the
-- accounting row, and capacity is leased to stripes.
--
-- Until version 3 the accounting row counted live groups only, and every tool
-- turn locked it twice: Reserve (to check the row plus every reservation) and
-- Admit (to move the reservation's count onto the row, holding the lock
-- across the admission's WAL flush). Every admission of every replica queued
-- on that one row.
--
-- From version 4 the row counts what is taken from the capacity:
--
--   live_groups = PENDING + INFLIGHT groups + counted reservations + the
--                 free groups leased to the stripes (the same for live_calls)
--
-- so that the row alone, under its lock, decides exactly, and nothing but
-- Reserve ever raises it. A stripe (correlation_usage_stripes) holds a small
-- lease of capacity already counted on the row; a reservation takes from one
-- stripe with a conditional decrement (that stripe's lock only) and refills it
-- from the row when empty (the row's lock, once per lease). When a lease
-- cannot be had, the reservation takes every lease back and decides on the
-- row under its lock: near the cap, decisions are serialized and exact, as
-- before. Admit turns a reservation into a group without writing the row.
--
-- counted tells the reservations apart during a rolling upgrade: version 3
-- binaries still running insert reservations without it (false: not on the
-- row; they add to the row themselves when they admit), and the existing
-- reservations are not on the row either, so false is right for every row
-- there is now. Version 4 decisions on the row add the uncounted reservations
-- that have not expired (the partial index keeps that cheap); version 3
-- checks add every reservation to the row, so they count the new ones twice:
-- stricter, never looser. The stripes start empty, which the row's count of
-- version 3 already agrees with.
ALTER TABLE correlation_reservations ADD COLUMN counted boolean NOT NULL DEFAULT false;

CREATE INDEX correlation_reservations_uncounted ON correlation_reservations (expires_at) WHERE NOT counted;

CREATE TABLE correlation_usage_stripes (
    stripe     smallint PRIMARY KEY CHECK (stripe >= 0),
    free_groups bigint  NOT NULL DEFAULT 0 CHECK (free_groups >= 0),
    free_calls  bigint  NOT NULL DEFAULT 0 CHECK (free_calls >= 0)
);

INSERT INTO correlation_usage_stripes (stripe) SELECT generate_series(0, 15);
