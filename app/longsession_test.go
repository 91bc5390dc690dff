package app_test

import (
	"runtime"
	"strings"
	"testing"

	"github.com/matryer/is"

	"github.com/pmgate/pmgate/domain/chat"
)

// TestAContinuedTurnOfALongTranscriptAllocatesNoCopyOfIt measures what a
// continued turn of a 30 MB transcript (1,200 tool-output-sized messages of
// 25 KB) allocates in the app: the transcript is hashed when the turn is
// planned (to find its anchor) and again, with the answer, when the next
// anchor is recorded; each hash streams the canonical form through SHA-256,
// so neither holds a copy of the transcript (each used to build one, growing
// by doubling: 10.8× the transcript per continued turn). Only the new message
// goes upstream. The log line states the ratio.
func TestAContinuedTurnOfALongTranscriptAllocatesNoCopyOfIt(t *testing.T) {
	if testing.Short() {
		t.Skip("allocates a 30 MB transcript")
	}
	is := is.New(t)
	r := newConvRig(t, nil)
	chunk := strings.Repeat("tool output line\n", 25000/17)
	msgs := make([]chat.Message, 0, 1204)
	size := 0
	for i := 0; i < 600; i++ {
		msgs = append(msgs, user(chunk), assistant(chunk))
		size += 2 * len(chunk)
	}
	msgs = append(msgs, user("first"))
	a := r.turn(t, textRequest(msgs...)) // a fresh turn: anchored at its end
	msgs = append(msgs, assistant(a), user("second"))

	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	a = r.turn(t, textRequest(msgs...))
	runtime.ReadMemStats(&after)
	is.Equal(a, "answer to second")
	is.Equal(len(r.last().Chat.Messages), 1) // only the new message went upstream
	is.True(r.last().ConversationID != "")   // into the anchored conversation
	alloc := after.TotalAlloc - before.TotalAlloc
	t.Logf("transcript %d bytes; the continued turn allocated %d bytes (%.2f× the transcript)", size, alloc, float64(alloc)/float64(size))
	is.True(alloc < uint64(size)/4) // far less than one copy of the transcript
}
