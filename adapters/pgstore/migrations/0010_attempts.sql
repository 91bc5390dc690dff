-- pmgate attempt records, schema version 10: a fresh request an SDK may retry
-- by itself (or one carrying an Idempotency-Key) is recorded while it is
-- answered and for a bounded time after, so that its repeat on any replica
-- gets its outcome instead of a second upstream dispatch (docs/USAGE.md).
--
-- attempts: one row per request key (a hash of the principal, the route and
-- the body or the client's key; never content). answer is the recorded answer
-- of a success in the app's versioned format; code the stable code of a
-- failure. size is what the row counts against the byte budget.
--
-- attempt_budget: the one row holding the bytes of all rows. Every write
-- locks it first (SELECT … FOR UPDATE), so the budget is exact across
-- replicas. Earlier binaries never touch these tables.
CREATE TABLE attempts (
    key       text        PRIMARY KEY,
    body_hash text        NOT NULL,
    token     text        NOT NULL,
    done      boolean     NOT NULL DEFAULT false,
    awaited   boolean     NOT NULL DEFAULT false, -- a repeat waits for the attempt in flight
    code      text        NOT NULL DEFAULT '',
    answer    bytea,
    deadline  timestamptz NOT NULL,
    expires   timestamptz NOT NULL,
    size      bigint      NOT NULL CHECK (size > 0)
);
CREATE INDEX attempts_expires ON attempts (expires);

CREATE TABLE attempt_budget (
    id    integer PRIMARY KEY CHECK (id = 1),
    bytes bigint  NOT NULL CHECK (bytes >= 0)
);
INSERT INTO attempt_budget (id, bytes) VALUES (1, 0);
