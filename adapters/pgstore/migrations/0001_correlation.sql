-- pmgate correlation store, schema version 1.
--
-- One row per tool-call group. The indexed columns are projections of the
-- record, written by the same statement as the record; every state change is
-- decided by the domain machine in Go (the store's update closure), never by
-- SQL.
CREATE TABLE correlation_groups (
    key                 text        PRIMARY KEY,
    principal_id        text        NOT NULL,
    state               text        NOT NULL
        CHECK (state IN ('PENDING', 'INFLIGHT', 'CONSUMED', 'EXPIRED', 'CANCELLED', 'UNCERTAIN')),
    calls               integer     NOT NULL CHECK (calls > 0),
    issued_at           timestamptz NOT NULL,
    pending_expires_at  timestamptz NOT NULL,
    inflight_expires_at timestamptz,          -- NULL unless INFLIGHT
    terminal_expires_at timestamptz,          -- NULL unless terminal
    due_at              timestamptz,          -- next time event (Group.Due); NULL when none
    record              bytea       NOT NULL, -- versioned encoding of the group, without the cached response
    cached_response     bytea,                -- retained terminal response; NULL when none
    updated_at          timestamptz NOT NULL DEFAULT now()
);

CREATE INDEX correlation_groups_due ON correlation_groups (due_at) WHERE due_at IS NOT NULL;
CREATE INDEX correlation_groups_state ON correlation_groups (state);

-- The lookup index (docs/CORRELATION.md): (principal, public id) → group. The
-- primary key makes a public id unique per principal; a colliding admission
-- fails and the caller draws new ids.
CREATE TABLE correlation_calls (
    principal_id text NOT NULL,
    public_id    text NOT NULL,
    group_key    text NOT NULL REFERENCES correlation_groups (key) ON DELETE CASCADE,
    PRIMARY KEY (principal_id, public_id)
);

CREATE INDEX correlation_calls_group ON correlation_calls (group_key);

-- Capacity held for groups about to be admitted. A reservation lives for
-- seconds; expires_at (database clock) frees the ones of a replica that died
-- between reserving and admitting.
CREATE TABLE correlation_reservations (
    id         text        PRIMARY KEY,
    calls      integer     NOT NULL CHECK (calls > 0),
    expires_at timestamptz NOT NULL
);

-- The one accounting row: live (PENDING + INFLIGHT) groups and calls and the
-- bytes of cached terminal responses. It is changed in the same transaction as
-- the groups it accounts for, and locked by every admission check, which
-- serializes capacity decisions across replicas.
CREATE TABLE correlation_usage (
    id          boolean PRIMARY KEY DEFAULT true CHECK (id),
    live_groups bigint  NOT NULL DEFAULT 0 CHECK (live_groups >= 0),
    live_calls  bigint  NOT NULL DEFAULT 0 CHECK (live_calls >= 0),
    cache_bytes bigint  NOT NULL DEFAULT 0 CHECK (cache_bytes >= 0)
);

INSERT INTO correlation_usage DEFAULT VALUES;
