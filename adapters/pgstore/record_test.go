package pgstore_test

import (
	"reflect"
	"testing"
	"time"

	"github.com/matryer/is"
	"pgregory.net/rapid"

	"github.com/pmgate/pmgate/adapters/pgstore"
	"github.com/pmgate/pmgate/domain/correlation"
)

// The record encoding lists every field by hand: a field added to the domain
// record must be added to the encoding (and the record version considered).
func TestTheEncodingKnowsEveryFieldOfTheRecord(t *testing.T) {
	is := is.New(t)
	is.Equal(reflect.TypeFor[correlation.Group]().NumField(), 19) // update record.go when this changes
	is.Equal(reflect.TypeFor[correlation.Call]().NumField(), 8)   // update record.go when this changes
}

func genTime(t *rapid.T, label string) time.Time {
	if rapid.Bool().Draw(t, label+"_zero") {
		return time.Time{}
	}
	sec := rapid.Int64Range(-1<<40, 1<<40).Draw(t, label+"_sec")
	ns := rapid.Int64Range(0, 999999999).Draw(t, label+"_ns")
	zone := time.FixedZone("z", rapid.IntRange(-12, 12).Draw(t, label+"_zone")*3600)
	return time.Unix(sec, ns).In(zone)
}

func genGroup(t *rapid.T) correlation.Group {
	s := func(label string) string { return rapid.String().Draw(t, label) }
	raw := func(label string) string { return string(rapid.SliceOf(rapid.Byte()).Draw(t, label)) }
	g := correlation.Group{
		Key: s("key"), PrincipalID: s("principal"), WorkspaceID: s("ws"), Model: s("model"), ConversationID: raw("conv"),
		UpstreamGroupID: raw("ugroup"), State: rapid.SampledFrom(correlation.States).Draw(t, "state"),
		IssuedAt: genTime(t, "issued"), PendingExpiresAt: genTime(t, "pending"), InflightExpiresAt: genTime(t, "inflight"),
		TerminalExpiresAt: genTime(t, "terminal"), TranscriptHash: s("th"), TranscriptLength: rapid.Int().Draw(t, "tl"),
		ToolsHash: s("tools"), AcceptedResultsHash: s("arh"), DispatchAttemptID: s("attempt"), TerminalResponseDigest: s("digest"),
	}
	for i := range rapid.IntRange(0, 5).Draw(t, "calls") {
		g.Calls = append(g.Calls, correlation.Call{PublicID: s("pub"), UpstreamID: raw("up"), UpstreamGroupID: raw("upg"),
			Index: i, OriginalName: s("name"), ArgumentsJSON: raw("args"), ArgumentsHash: s("ah"), SchemaHash: s("sh")})
	}
	return g
}

// sameInstant compares groups with times compared as instants.
func sameInstant(a, b correlation.Group) bool {
	for _, p := range []*correlation.Group{&a, &b} {
		p.IssuedAt, p.PendingExpiresAt = p.IssuedAt.UTC(), p.PendingExpiresAt.UTC()
		p.InflightExpiresAt, p.TerminalExpiresAt = p.InflightExpiresAt.UTC(), p.TerminalExpiresAt.UTC()
	}
	return reflect.DeepEqual(a, b)
}

func TestRecordsRoundTripExactly(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		g := genGroup(t)
		got, err := pgstore.DecodeRecord(pgstore.EncodeRecord(g))
		if err != nil {
			t.Fatalf("decode: %v", err)
		}
		if !sameInstant(got, g) {
			t.Fatalf("round trip:\n got %#v\nwant %#v", got, g)
		}
		if got.InflightExpiresAt.IsZero() != g.InflightExpiresAt.IsZero() {
			t.Fatal("zero time not kept")
		}
	})
}

func TestCorruptRecordsAreRefused(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		b := pgstore.EncodeRecord(genGroup(t))
		switch rapid.IntRange(0, 2).Draw(t, "how") {
		case 0:
			b = b[:rapid.IntRange(0, len(b)-1).Draw(t, "cut")]
		case 1:
			b = append(b, rapid.Byte().Draw(t, "extra"))
		case 2:
			b[0] = rapid.ByteRange(2, 255).Draw(t, "version")
		}
		if _, err := pgstore.DecodeRecord(b); err == nil {
			t.Fatal("a corrupt record decoded")
		}
	})
}

func TestDueAtAgreesWithTheMachine(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		g := genGroup(t)
		now := genTime(t, "now")
		ev, due := g.Due(now)
		at := pgstore.DueAt(g)
		switch {
		case at == nil:
			if due {
				t.Fatalf("no due_at but %s is due", ev)
			}
		default:
			if due != !now.Before(*at) {
				t.Fatalf("due_at %v vs Due(%v) = %v", *at, now, due)
			}
		}
	})
}
