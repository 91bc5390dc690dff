-- pmgate correlation store, schema version 5: the call index keeps its
-- cascade, without the foreign key's check on every insert.
--
-- The foreign key from correlation_calls to correlation_groups made every
-- admission run one referential check per call index row (a lookup and a
-- KEY SHARE lock of the group row it has just inserted), a large part of the
-- server's work per tool turn. Nothing needs that check: the only statement
-- that inserts index rows is the admission's, which inserts them from the
-- group row it inserts in the same statement (FROM grp), so an index row
-- without its group cannot be written. What the foreign key also did, and
-- every binary relies on (version 4 ones too, during a rolling upgrade), is
-- the cascade: deleting a group deletes its index rows. This trigger does that,
-- once per deleting statement (the sweep deletes many groups in one), in the
-- same transaction. The function keeps the search_path of its creation, so a
-- session with another one deletes the index rows of these tables too.
ALTER TABLE correlation_calls DROP CONSTRAINT correlation_calls_group_key_fkey;

CREATE FUNCTION correlation_calls_cascade() RETURNS trigger LANGUAGE plpgsql SET search_path FROM CURRENT AS $$
BEGIN
    DELETE FROM correlation_calls c USING gone g WHERE c.group_key = g.key;
    RETURN NULL;
END
$$;

CREATE TRIGGER correlation_groups_cascade AFTER DELETE ON correlation_groups
    REFERENCING OLD TABLE AS gone FOR EACH STATEMENT EXECUTE FUNCTION correlation_calls_cascade();
