package pgstore

import (
	"encoding/binary"
	"time"

	"github.com/cockroachdb/errors"

	"github.com/pmgate/pmgate/domain/correlation"
)

// recordVersion is the version byte of the group record encoding. A record
// whose version this binary does not know is refused, never guessed at.
//
// Version 1: every field of correlation.Group except CachedResponse (kept in
// its own column), in declaration order; strings as uvarint length + bytes
// (byte-exact, invalid UTF-8 included: argument strings are kept verbatim),
// ints as varints, times as varint Unix seconds + uvarint nanoseconds (decoded
// in UTC; the instant is exact), calls as a uvarint count followed by each
// call's fields in declaration order.
const recordVersion = 1

// errRecord marks a record that cannot be decoded (corrupt, or written by a
// newer binary).
var errRecord = errors.New("pgstore: undecodable group record")

type encoder struct{ b []byte }

func (e *encoder) str(s string) {
	e.b = binary.AppendUvarint(e.b, uint64(len(s)))
	e.b = append(e.b, s...)
}

func (e *encoder) int(n int) { e.b = binary.AppendVarint(e.b, int64(n)) }

func (e *encoder) time(t time.Time) {
	e.b = binary.AppendVarint(e.b, t.Unix())
	e.b = binary.AppendUvarint(e.b, uint64(t.Nanosecond()))
}

// encodeRecord returns the version-1 encoding of g without its cached response.
func encodeRecord(g *correlation.Group) []byte {
	n := 64 + g.Bytes()
	e := encoder{b: make([]byte, 0, n)}
	e.b = append(e.b, recordVersion)
	e.str(g.Key)
	e.str(g.PrincipalID)
	e.str(g.WorkspaceID)
	e.str(g.Model)
	e.str(g.ConversationID)
	e.str(g.UpstreamGroupID)
	e.str(string(g.State))
	e.time(g.IssuedAt)
	e.time(g.PendingExpiresAt)
	e.time(g.InflightExpiresAt)
	e.time(g.TerminalExpiresAt)
	e.str(g.TranscriptHash)
	e.int(g.TranscriptLength)
	e.str(g.ToolsHash)
	e.b = binary.AppendUvarint(e.b, uint64(len(g.Calls)))
	for i := range g.Calls {
		c := &g.Calls[i]
		e.str(c.PublicID)
		e.str(c.UpstreamID)
		e.str(c.UpstreamGroupID)
		e.int(c.Index)
		e.str(c.OriginalName)
		e.str(c.ArgumentsJSON)
		e.str(c.ArgumentsHash)
		e.str(c.SchemaHash)
	}
	e.str(g.AcceptedResultsHash)
	e.str(g.DispatchAttemptID)
	e.str(g.TerminalResponseDigest)
	return e.b
}

type decoder struct {
	b   []byte
	err error
}

func (d *decoder) fail() {
	if d.err == nil {
		d.err = errors.Mark(errors.New("pgstore: truncated or malformed group record"), errRecord)
	}
	d.b = nil
}

func (d *decoder) uvarint() uint64 {
	v, n := binary.Uvarint(d.b)
	if n <= 0 {
		d.fail()
		return 0
	}
	d.b = d.b[n:]
	return v
}

func (d *decoder) varint() int64 {
	v, n := binary.Varint(d.b)
	if n <= 0 {
		d.fail()
		return 0
	}
	d.b = d.b[n:]
	return v
}

func (d *decoder) str() string {
	n := d.uvarint()
	if n > uint64(len(d.b)) {
		d.fail()
		return ""
	}
	s := string(d.b[:n])
	d.b = d.b[n:]
	return s
}

func (d *decoder) int() int { return int(d.varint()) }

func (d *decoder) time() time.Time {
	sec := d.varint()
	nsec := d.uvarint()
	if nsec >= uint64(time.Second) {
		d.fail()
		return time.Time{}
	}
	return time.Unix(sec, int64(nsec)).UTC()
}

// decodeRecord is the inverse of encodeRecord; CachedResponse is left nil.
func decodeRecord(b []byte) (correlation.Group, error) {
	if len(b) == 0 {
		return correlation.Group{}, errors.Mark(errors.New("pgstore: empty group record"), errRecord)
	}
	if b[0] != recordVersion {
		return correlation.Group{}, errors.Mark(errors.Newf("pgstore: group record version %d is not known to this binary (knows %d)", b[0], recordVersion), errRecord)
	}
	d := decoder{b: b[1:]}
	var g correlation.Group
	g.Key = d.str()
	g.PrincipalID = d.str()
	g.WorkspaceID = d.str()
	g.Model = d.str()
	g.ConversationID = d.str()
	g.UpstreamGroupID = d.str()
	g.State = correlation.State(d.str())
	g.IssuedAt = d.time()
	g.PendingExpiresAt = d.time()
	g.InflightExpiresAt = d.time()
	g.TerminalExpiresAt = d.time()
	g.TranscriptHash = d.str()
	g.TranscriptLength = d.int()
	g.ToolsHash = d.str()
	n := d.uvarint()
	if n > uint64(len(d.b)) { // every call takes at least one byte per field
		d.fail()
	}
	if d.err == nil && n > 0 {
		g.Calls = make([]correlation.Call, n)
		for i := range g.Calls {
			c := &g.Calls[i]
			c.PublicID = d.str()
			c.UpstreamID = d.str()
			c.UpstreamGroupID = d.str()
			c.Index = d.int()
			c.OriginalName = d.str()
			c.ArgumentsJSON = d.str()
			c.ArgumentsHash = d.str()
			c.SchemaHash = d.str()
		}
	}
	g.AcceptedResultsHash = d.str()
	g.DispatchAttemptID = d.str()
	g.TerminalResponseDigest = d.str()
	if d.err != nil {
		return correlation.Group{}, d.err
	}
	if len(d.b) != 0 {
		return correlation.Group{}, errors.Mark(errors.New("pgstore: trailing bytes after group record"), errRecord)
	}
	return g, nil
}

// dueAt is the instant of the next time event of g (correlation.Group.Due),
// or nil when none is pending. It only selects sweep candidates: the domain's
// Due decides, so a candidate selected early (the column keeps microseconds)
// is left alone.
func dueAt(g *correlation.Group) *time.Time {
	var t time.Time
	switch {
	case g.State == correlation.Pending:
		t = g.PendingExpiresAt
	case g.State == correlation.Inflight && !g.InflightExpiresAt.IsZero():
		t = g.InflightExpiresAt
	case g.State.Terminal():
		t = g.TerminalExpiresAt
	default:
		return nil
	}
	return &t
}

// nullTime is t, or nil for the zero time (a NULL column).
func nullTime(t time.Time) *time.Time {
	if t.IsZero() {
		return nil
	}
	return &t
}
