package porttest

import (
	"context"
	"fmt"
	"io"
	"sync"
	"time"

	"github.com/pmgate/pmgate/domain/chat"
	"github.com/pmgate/pmgate/ports"
)

// Clock is a settable fake clock.
type Clock struct {
	mu  sync.Mutex
	now time.Time
}

// NewClock returns a clock at t.
func NewClock(t time.Time) *Clock { return &Clock{now: t} }

// Now implements ports.Clock.
func (c *Clock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

// Advance moves the clock forward.
func (c *Clock) Advance(d time.Duration) {
	c.mu.Lock()
	c.now = c.now.Add(d)
	c.mu.Unlock()
}

// IDs is a deterministic, collision-free fake id source.
type IDs struct {
	mu sync.Mutex
	n  int
}

// PublicToolCallID implements ports.IDSource.
func (i *IDs) PublicToolCallID() (string, error) {
	i.mu.Lock()
	defer i.mu.Unlock()
	i.n++
	return fmt.Sprintf("call_pmn_fake%06d", i.n), nil
}

// Token implements ports.IDSource.
func (i *IDs) Token() (string, error) {
	i.mu.Lock()
	defer i.mu.Unlock()
	i.n++
	return fmt.Sprintf("tok%06d", i.n), nil
}

// Script is what the fake upstream answers to one request: Err before any
// event (marked ports.ErrNotSent when NotSent), else Events then End (nil End
// is a proven end: io.EOF).
type Script struct {
	Err     error
	Events  []chat.Event
	End     error
	NotSent bool
}

// Upstream is a fake ports.Upstream: Respond decides the script of each
// request; every request is recorded.
type Upstream struct {
	mu       sync.Mutex
	Respond  func(req ports.UpstreamRequest) Script
	requests []ports.UpstreamRequest
}

var _ ports.Upstream = (*Upstream)(nil)

// Chat implements ports.Upstream.
func (u *Upstream) Chat(ctx context.Context, req ports.UpstreamRequest) (ports.Stream, error) {
	u.mu.Lock()
	u.requests = append(u.requests, req)
	u.mu.Unlock()
	s := u.Respond(req)
	if s.Err != nil {
		return nil, s.Err
	}
	return &stream{events: s.Events, end: s.End}, nil
}

// Requests returns every request received.
func (u *Upstream) Requests() []ports.UpstreamRequest {
	u.mu.Lock()
	defer u.mu.Unlock()
	return append([]ports.UpstreamRequest(nil), u.requests...)
}

// Continuations counts the TOOL_RESPONSE requests received.
func (u *Upstream) Continuations() int {
	n := 0
	for _, r := range u.Requests() {
		if r.Continuation != nil {
			n++
		}
	}
	return n
}

type stream struct {
	events []chat.Event
	end    error
	closed bool
}

func (s *stream) Next(ctx context.Context) (chat.Event, error) {
	if err := ctx.Err(); err != nil {
		return chat.Event{}, err
	}
	if len(s.events) > 0 {
		e := s.events[0]
		s.events = s.events[1:]
		return e, nil
	}
	if s.end != nil {
		return chat.Event{}, s.end
	}
	return chat.Event{}, io.EOF
}

func (s *stream) Close() error { s.closed = true; return nil }

// Text returns the events of a text answer.
func Text(conv string, parts ...string) []chat.Event {
	evs := []chat.Event{{Kind: chat.EventConversation, ConversationID: conv}}
	for _, p := range parts {
		evs = append(evs, chat.Event{Kind: chat.EventText, Text: p})
	}
	return evs
}

// ToolCalls returns the events of a tool group: each call's arguments split in
// two fragments; names must be tools the request advertised.
func ToolCalls(conv, group string, names ...string) []chat.Event {
	evs := []chat.Event{{Kind: chat.EventConversation, ConversationID: conv}}
	for i, n := range names {
		args := fmt.Sprintf(`{"q":"v%d"}`, i)
		half := len(args) / 2
		evs = append(evs,
			chat.Event{Kind: chat.EventToolCall, ToolCall: &chat.ToolCallDelta{Index: i, UpstreamID: fmt.Sprintf("up-%s-%d", group, i), UpstreamGroupID: group, Name: n, ArgumentsFragment: args[:half]}},
			chat.Event{Kind: chat.EventToolCall, ToolCall: &chat.ToolCallDelta{Index: i, UpstreamID: fmt.Sprintf("up-%s-%d", group, i), UpstreamGroupID: group, ArgumentsFragment: args[half:]}})
	}
	return evs
}
