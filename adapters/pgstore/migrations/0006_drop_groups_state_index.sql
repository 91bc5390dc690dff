-- pmgate correlation store, schema version 6: no index on the group state.
--
-- Every admission inserted into it, and every transition (a claim, a
-- completion: the state and due_at change, so the update is never HOT)
-- inserted a new entry into it beside the primary key and the due index. No
-- statement on the path of a request reads it: the counts aggregate every
-- group by state (a scan either way), and the list of pending groups is read
-- only at the shutdown of a store that is not shared, never for this one.
-- Binaries of every earlier version work without it.
DROP INDEX correlation_groups_state;
