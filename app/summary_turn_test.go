package app_test

import (
	"context"
	"io"
	"log/slog"
	"sync"
	"testing"
	"time"

	"github.com/matryer/is"

	"github.com/pmgate/pmgate/adapters/memstore"
	"github.com/pmgate/pmgate/app"
	"github.com/pmgate/pmgate/domain/chat"
	"github.com/pmgate/pmgate/domain/correlation"
	"github.com/pmgate/pmgate/domain/errs"
	"github.com/pmgate/pmgate/ports"
	"github.com/pmgate/pmgate/ports/porttest"
)

// readsUpstream answers with a readsStream of its batches and keeps the
// request it was sent.
type readsUpstream struct {
	mu      sync.Mutex
	batches [][]chat.Event
	req     ports.UpstreamRequest
	stream  *readsStream
}

func (u *readsUpstream) Chat(_ context.Context, req ports.UpstreamRequest) (ports.Stream, error) {
	u.mu.Lock()
	defer u.mu.Unlock()
	u.req, u.stream = req, &readsStream{batches: u.batches}
	return u.stream, nil
}

// readsStream is a stream whose events arrive in reads, one batch each, as
// the Postman stream's do: Next reads the next batch only when the last one
// is spent, and Buffered says whether it would. At the end it notes its
// outcome (ports.OutcomeNoter).
type readsStream struct {
	mu      sync.Mutex
	batches [][]chat.Event
	cur     []chat.Event
	reads   int
	ended   bool
}

func (s *readsStream) Buffered() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.cur) > 0 || s.ended
}

func (s *readsStream) Next(context.Context) (chat.Event, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if len(s.cur) == 0 && !s.ended {
		s.reads++
		if len(s.batches) == 0 {
			s.ended = true
		} else {
			s.cur, s.batches = s.batches[0], s.batches[1:]
		}
	}
	if len(s.cur) == 0 {
		return chat.Event{}, io.EOF
	}
	ev := s.cur[0]
	s.cur = s.cur[1:]
	return ev, nil
}

func (s *readsStream) OutcomeNote() []slog.Attr {
	s.mu.Lock()
	defer s.mu.Unlock()
	if !s.ended {
		return nil
	}
	return []slog.Attr{slog.String("outcome", "completed")}
}

func (s *readsStream) Close() error { return nil }

func (s *readsStream) readsSoFar() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.reads
}

// A turn tells its reader when its next delta needs a read of the upstream
// (TryNext not ok, having read nothing) and hands over, without a read, what
// an earlier read brought: the renderer writes what it holds exactly when
// the turn is about to wait. When it is closed its summary says what the
// request did, with the stream's outcome as the group "upstream"; the app
// asked the stream for that note. A recorded attempt (an SDK's request)
// behaves the same through its wrapper.
func TestATurnSaysWhenItWouldWaitAndSummarizesTheRequest(t *testing.T) {
	for _, recorded := range []bool{false, true} {
		t.Run(map[bool]string{false: "plain", true: "recorded"}[recorded], func(t *testing.T) {
			is := is.New(t)
			up := &readsUpstream{batches: [][]chat.Event{porttest.Text("conv-1", "a", "bb"), porttest.Text("conv-1", "ccc")[1:]}}
			gw := app.New(app.Config{WorkspaceID: "ws", Correlation: true, Policy: policy}, up,
				memstore.New(correlation.Limits{MaxGroups: 100, MaxCalls: 400, ResponseCacheBytes: 1 << 20}, policy),
				porttest.NewClock(porttest.T0), &porttest.IDs{}, slog.New(slog.DiscardHandler))
			ctx := context.Background()
			var rep *app.Repeat
			if recorded {
				gw.WithAttempts(memstore.NewAttempts(1<<20), app.AttemptPolicy{TTL: time.Minute, Grace: 30 * time.Second, Poll: time.Millisecond})
				rep = sdk(0, `{"q":1}`)
			}
			turn, err := gw.Chat(ctx, principal, question, rep)
			is.NoErr(err)
			is.True(up.req.Noted) // the stream's outcome is asked for: the summary carries it
			tt, ok := turn.(app.TryTurn)
			is.True(ok)
			try := func() (string, bool) {
				d, ok, err := tt.TryNext(ctx)
				is.NoErr(err)
				return d.Text, ok
			}
			next := func() string {
				d, err := tt.Next(ctx)
				is.NoErr(err)
				return d.Text
			}
			_, ok = try()
			is.True(!ok) // nothing read yet: it would wait
			is.Equal(up.stream.readsSoFar(), 0)
			is.Equal(next(), "a") // the first read
			text, ok := try()
			is.True(ok)
			is.Equal(text, "bb") // at hand: the same read
			_, ok = try()
			is.True(!ok) // the read is spent
			is.Equal(up.stream.readsSoFar(), 1)
			is.Equal(next(), "ccc") // the second read
			_, ok = try()
			is.True(!ok)
			d, err := tt.Next(ctx) // the third read finds the end
			is.NoErr(err)
			is.Equal(d.Finish, app.FinishStop)
			_, ok, err = tt.TryNext(ctx)
			is.True(ok) // the end is at hand
			is.Equal(err, io.EOF)
			turn.Close()
			s := turn.(app.Summarized).Summary()
			is.Equal(s.Dispatches, 1)
			is.Equal(s.QueryChars, int64(len("what?")))
			is.Equal(s.OutputChars, int64(len("abbccc")))
			is.Equal(len(s.Notes), 1)
			is.Equal(s.Notes[0].String(), "upstream=[outcome=completed]")
		})
	}
}

// A refusal after the dispatch says what the request did: the dispatch
// (the upstream accepted it, so it counts), the characters sent and the
// conversation decision its access line carries.
func TestARefusalAfterTheDispatchCarriesTheRequestsSummary(t *testing.T) {
	is := is.New(t)
	r := newConvRig(t, func(ports.UpstreamRequest) porttest.Script {
		return porttest.Script{Err: errs.New(errs.UpstreamServerError)}
	})
	_, err := r.gw.Chat(t.Context(), principal, textRequest(user("four")), nil)
	is.True(errs.Has(err, errs.UpstreamServerError)) // the refusal keeps its code
	s := app.SummaryOf(err)
	is.Equal(s.Dispatches, 1)
	is.Equal(s.QueryChars, int64(len("four")))
	is.Equal(len(s.Notes), 1)
	is.Equal(s.Notes[0].Key, "conversation")
	is.Equal(s.Notes[0].Value.Group()[0].String(), "decision=fresh")
}
