-- pmgate conversation anchors, schema version 9: a continued turn that failed
-- after it was sent leaves its anchor RESUMABLE instead of RETIRED, and a
-- request resuming one (or an ADVANCED anchor from its earlier point) holds it
-- RESUMING, claimed like CLAIMED: never chosen to make room. RETIRED rows of
-- earlier builds stay as they are. The statement only widens a CHECK and
-- rebuilds one partial index, so replicas of version 8 keep working beside
-- version 9 until they meet a RESUMABLE or RESUMING anchor, which they refuse
-- to decode like any newer record (a fresh conversation for that turn).
ALTER TABLE conversation_anchors DROP CONSTRAINT conversation_anchors_state_check;
ALTER TABLE conversation_anchors ADD CONSTRAINT conversation_anchors_state_check
    CHECK (state IN ('ACTIVE', 'CLAIMED', 'ADVANCED', 'RETIRED', 'EXPIRED', 'RESUMABLE', 'RESUMING'));
DROP INDEX conversation_anchors_victim;
CREATE INDEX conversation_anchors_victim ON conversation_anchors ((state = 'ACTIVE'), seq)
    WHERE state NOT IN ('CLAIMED', 'RESUMING');
