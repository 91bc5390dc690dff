-- pmgate conversation anchors, schema version 2.
--
-- One row per anchor, keyed by (principal, transcript hash): the only lookup
-- there is. state, created_at, due_at and bytes are projections of the record,
-- written by the same statement as the record; every state change is decided
-- by the domain's anchor machine in Go, never by SQL. Version 1 binaries never
-- touch these tables, so replicas can be rolled one at a time.
CREATE TABLE conversation_anchors (
    principal_id    text        NOT NULL,
    transcript_hash text        NOT NULL,
    state           text        NOT NULL
        CHECK (state IN ('ACTIVE', 'CLAIMED', 'ADVANCED', 'RETIRED', 'EXPIRED')),
    created_at      timestamptz NOT NULL,
    due_at          timestamptz,          -- next time event (Anchor.Due); NULL when none
    bytes           integer     NOT NULL CHECK (bytes > 0),
    seq             bigint      NOT NULL, -- when the anchor entered its state (capacity order)
    record          bytea       NOT NULL, -- versioned encoding of the anchor
    PRIMARY KEY (principal_id, transcript_hash)
);

CREATE INDEX conversation_anchors_due ON conversation_anchors (due_at) WHERE due_at IS NOT NULL;
-- Capacity victims: the anchor that became a tombstone first, else the one that
-- became ACTIVE first; never a CLAIMED one.
CREATE SEQUENCE conversation_anchor_seq;
CREATE INDEX conversation_anchors_victim ON conversation_anchors ((state = 'ACTIVE'), seq) WHERE state <> 'CLAIMED';

-- The one accounting row of anchors, locked by every Record: capacity
-- decisions of all replicas are serialized and exact.
CREATE TABLE conversation_usage (
    id      boolean PRIMARY KEY DEFAULT true CHECK (id),
    anchors bigint  NOT NULL DEFAULT 0 CHECK (anchors >= 0),
    bytes   bigint  NOT NULL DEFAULT 0 CHECK (bytes >= 0)
);

INSERT INTO conversation_usage DEFAULT VALUES;
