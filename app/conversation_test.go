package app_test

import (
	"context"
	"errors"
	"log/slog"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/matryer/is"

	"github.com/pmgate/pmgate/adapters/memstore"
	"github.com/pmgate/pmgate/app"
	"github.com/pmgate/pmgate/domain/chat"
	"github.com/pmgate/pmgate/domain/conversation"
	"github.com/pmgate/pmgate/domain/correlation"
	"github.com/pmgate/pmgate/domain/errs"
	"github.com/pmgate/pmgate/internal/testkit"
	"github.com/pmgate/pmgate/ports"
	"github.com/pmgate/pmgate/ports/porttest"
)

var anchorPolicy = conversation.Policy{TTL: 30 * time.Minute, ClaimTTL: 150 * time.Second, TerminalTTL: 15 * time.Minute}

// syncBuffer is a concurrency-safe log sink.
type syncBuffer = testkit.SyncBuffer

type convRig struct {
	*rig
	anchors *memstore.Anchors
	logs    *syncBuffer
}

// newConvRig is a gateway with continuity on; the fake upstream answers every
// USER_QUERY with text naming the conversation it was sent into ("conv-N" for
// a new one) and what it was asked.
func newConvRig(t *testing.T, respond func(ports.UpstreamRequest) porttest.Script) *convRig {
	t.Helper()
	n := 0
	var mu sync.Mutex
	if respond == nil {
		respond = func(req ports.UpstreamRequest) porttest.Script {
			mu.Lock()
			defer mu.Unlock()
			conv := req.ConversationID
			if conv == "" {
				n++
				conv = "conv-" + string(rune('0'+n))
			}
			last := req.Chat.Messages[len(req.Chat.Messages)-1]
			return porttest.Script{Events: porttest.Text(conv, "answer to ", *last.Content)}
		}
	}
	logs := &syncBuffer{}
	r := &convRig{rig: &rig{up: &porttest.Upstream{Respond: respond},
		store: memstore.New(correlation.Limits{MaxGroups: 100, MaxCalls: 400, ResponseCacheBytes: 1 << 20}, policy),
		clock: porttest.NewClock(porttest.T0)}, anchors: memstore.NewAnchors(conversation.Limits{MaxAnchors: 100}, anchorPolicy), logs: logs}
	r.gw = app.New(app.Config{WorkspaceID: "ws", Correlation: true, Policy: policy}, r.up, r.store, r.clock, &porttest.IDs{},
		slog.New(slog.NewJSONHandler(logs, &slog.HandlerOptions{Level: slog.LevelDebug}))).WithAnchors(r.anchors, anchorPolicy)
	return r
}

func user(s string) chat.Message      { return chat.Message{Role: chat.RoleUser, Content: str(s)} }
func assistant(s string) chat.Message { return conversation.Reply(s) }

// turn sends msgs and returns the answer text.
func (r *convRig) turn(t *testing.T, req chat.Request) string {
	t.Helper()
	turn, err := r.gw.Chat(t.Context(), principal, req, nil)
	if err != nil {
		t.Fatalf("chat: %v", err)
	}
	ds, err := drain(t, turn)
	if err != nil {
		t.Fatalf("drain: %v", err)
	}
	var b strings.Builder
	for _, d := range ds {
		b.WriteString(d.Text)
	}
	return b.String()
}

func (r *convRig) last() ports.UpstreamRequest {
	reqs := r.up.Requests()
	return reqs[len(reqs)-1]
}

func textRequest(msgs ...chat.Message) chat.Request {
	return chat.Request{Model: "m", Messages: msgs, ToolChoice: chat.ToolChoice{Mode: chat.ToolChoiceAuto}}
}

// freshReasons returns the reasons of the "conversation: fresh" log lines.
func (r *convRig) freshReasons() []string {
	var out []string
	for _, line := range strings.Split(r.logs.String(), "\n") {
		if strings.Contains(line, `"msg":"conversation: fresh"`) {
			i := strings.Index(line, `"reason":"`)
			out = append(out, strings.SplitN(line[i+len(`"reason":"`):], `"`, 2)[0])
		}
	}
	return out
}

func TestLaterTurnsContinueTheUpstreamConversationWithOnlyTheNewMessages(t *testing.T) {
	is := is.New(t)
	r := newConvRig(t, nil)
	sys := chat.Message{Role: chat.RoleSystem, Content: str(strings.Repeat("be helpful. ", 600))}
	msgs := []chat.Message{sys, user("one")}
	for i, q := range []string{"two", "three", "four"} {
		a := r.turn(t, textRequest(msgs...))
		msgs = append(msgs, assistant(a), user(q))
		if i == 0 {
			is.Equal(r.last().ConversationID, "") // the first turn starts a conversation
		}
	}
	a := r.turn(t, textRequest(msgs...))
	is.Equal(a, "answer to four")
	reqs := r.up.Requests()
	is.Equal(len(reqs), 4)
	for _, req := range reqs[1:] {
		is.Equal(req.ConversationID, "conv-1") // every later turn continues the first conversation
		is.Equal(len(req.Chat.Messages), 1)    // with only the new user message
		is.Equal(req.Chat.Messages[0].Role, chat.RoleUser)
	}
	is.Equal(r.freshReasons(), []string{"no_anchor"})                              // only the first turn was fresh
	is.Equal(strings.Count(r.logs.String(), `"msg":"conversation: continued"`), 3) // and the log says so
	is.True(!strings.Contains(r.logs.String(), "conv-1"))                          // never with an id
	c, err := r.anchors.Counts(t.Context())
	is.NoErr(err)
	is.Equal(c.ByState[conversation.Advanced], 3) // three anchors were continued
	is.Equal(c.ByState[conversation.Active], 1)   // the newest one waits for the next turn
}

func TestSeveralNewUserMessagesAreSentTogether(t *testing.T) {
	is := is.New(t)
	r := newConvRig(t, nil)
	a := r.turn(t, textRequest(user("one")))
	r.turn(t, textRequest(user("one"), assistant(a), user("two"), user("three")))
	is.Equal(r.last().ConversationID, "conv-1")
	is.Equal(len(r.last().Chat.Messages), 2) // both new user messages, nothing else
}

func TestAnythingButAnExactExtensionStartsFresh(t *testing.T) {
	sys := chat.Message{Role: chat.RoleSystem, Content: str("be brief")}
	cases := []struct {
		name   string
		next   func(a string) chat.Request
		reason string
	}{
		{"edited history", func(a string) chat.Request {
			return textRequest(sys, user("ONE"), assistant(a), user("two"))
		}, "history_changed"},
		{"edited answer", func(a string) chat.Request {
			return textRequest(sys, user("one"), assistant(a+"!"), user("two"))
		}, "history_changed"},
		{"truncated history", func(a string) chat.Request {
			return textRequest(user("one"), assistant("another answer"), user("two"))
		}, "history_changed"},
		{"system prompt dropped", func(a string) chat.Request {
			return textRequest(user("one"), assistant(a), user("two"))
		}, "instructions_changed"},
		{"changed system prompt", func(a string) chat.Request {
			return textRequest(chat.Message{Role: chat.RoleSystem, Content: str("be verbose")}, user("one"), assistant(a), user("two"))
		}, "instructions_changed"},
		{"another model", func(a string) chat.Request {
			req := textRequest(sys, user("one"), assistant(a), user("two"))
			req.Model = "other"
			return req
		}, "model_changed"},
		{"other tools", func(a string) chat.Request {
			req := textRequest(sys, user("one"), assistant(a), user("two"))
			req.Tools = tools
			return req
		}, "tools_changed"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			is := is.New(t)
			r := newConvRig(t, nil)
			a := r.turn(t, textRequest(sys, user("one")))
			next := c.next(a)
			r.turn(t, next)
			is.Equal(r.last().ConversationID, "")                       // a fresh conversation
			is.Equal(len(r.last().Chat.Messages), len(next.Messages))   // with the whole transcript
			is.Equal(r.freshReasons(), []string{"no_anchor", c.reason}) // and the log says why
			r.turn(t, textRequest(sys, user("one"), assistant(a), user("two")))
			is.Equal(r.last().ConversationID, "conv-1") // the original anchor is untouched by the fresh turn
		})
	}
}

func TestAnExpiredAnchorStartsFresh(t *testing.T) {
	is := is.New(t)
	r := newConvRig(t, nil)
	a := r.turn(t, textRequest(user("one")))
	r.clock.Advance(anchorPolicy.TTL)
	r.turn(t, textRequest(user("one"), assistant(a), user("two")))
	is.Equal(r.last().ConversationID, "")                        // CONVERSATION_TTL_MS passed: fresh
	is.Equal(r.freshReasons(), []string{"no_anchor", "expired"}) // and logged as expired
}

func TestARegeneratedTurnNeverContinuesTwice(t *testing.T) {
	is := is.New(t)
	r := newConvRig(t, nil)
	a := r.turn(t, textRequest(user("one")))
	r.turn(t, textRequest(user("one"), assistant(a), user("two")))
	is.Equal(r.last().ConversationID, "conv-1")
	r.turn(t, textRequest(user("one"), assistant(a), user("two, rephrased")))
	is.Equal(r.last().ConversationID, "")                                  // the upstream conversation moved past that history
	is.Equal(r.freshReasons(), []string{"no_anchor", "already_continued"}) // said so in the log
}

func TestARacingTurnStartsFreshAndOnlyOneContinues(t *testing.T) {
	is := is.New(t)
	r := newConvRig(t, nil)
	a := r.turn(t, textRequest(user("one")))
	next := textRequest(user("one"), assistant(a), user("two"))
	holder, err := r.gw.Chat(t.Context(), principal, next, nil) // holds the claim until its end
	is.NoErr(err)
	is.Equal(r.last().ConversationID, "conv-1")
	r.turn(t, next)
	is.Equal(r.last().ConversationID, "")                      // the racing turn starts fresh
	is.Equal(len(r.last().Chat.Messages), 3)                   // with the whole transcript
	is.Equal(r.freshReasons(), []string{"no_anchor", "raced"}) // and is logged as raced
	_, err = drain(t, holder)
	is.NoErr(err)

	// Many at once: exactly one continues.
	r2 := newConvRig(t, nil)
	a = r2.turn(t, textRequest(user("one")))
	next = textRequest(user("one"), assistant(a), user("two"))
	var wg sync.WaitGroup
	for range 16 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			turn, err := r2.gw.Chat(t.Context(), principal, next, nil)
			if err == nil {
				_, _ = drain(t, turn)
			}
		}()
	}
	wg.Wait()
	continued := 0
	for _, req := range r2.up.Requests() {
		if req.ConversationID != "" {
			continued++
		}
	}
	is.Equal(continued, 1) // one continuation; the others were fresh conversations
}

func TestAContinuationThatWasNotSentCanBeRetried(t *testing.T) {
	is := is.New(t)
	fail := false
	r := newConvRig(t, nil)
	base := r.up.Respond
	r.up.Respond = func(req ports.UpstreamRequest) porttest.Script {
		if fail {
			return porttest.Script{Err: errors.Join(errs.New(errs.UpstreamUnavailable), ports.ErrNotSent)}
		}
		return base(req)
	}
	a := r.turn(t, textRequest(user("one")))
	next := textRequest(user("one"), assistant(a), user("two"))
	fail = true
	_, err := r.gw.Chat(t.Context(), principal, next, nil)
	is.True(errs.Has(err, errs.UpstreamUnavailable)) // the failure is reported
	fail = false
	r.turn(t, next)
	is.Equal(r.last().ConversationID, "conv-1") // proven not sent: the retry continues
}

// A continuation whose outcome is unknown is never continued as if nothing
// happened: a retry whose whole transcript fits starts fresh (A23); only a
// transcript too long to start fresh resumes it, disclosed
// (TestAResumableConversationGoesOnOnlyWhenTheTranscriptDoesNotFit).
func TestAContinuationWithAnUnknownOutcomeIsNeverContinuedAgain(t *testing.T) {
	for _, how := range []string{"refused after sending", "broken stream", "client gone"} {
		t.Run(how, func(t *testing.T) {
			is := is.New(t)
			mode := ""
			r := newConvRig(t, nil)
			base := r.up.Respond
			r.up.Respond = func(req ports.UpstreamRequest) porttest.Script {
				switch mode {
				case "refused after sending":
					return porttest.Script{Err: errs.New(errs.UpstreamServerError)}
				case "broken stream":
					return porttest.Script{Events: porttest.Text(req.ConversationID, "par"), End: errs.New(errs.UpstreamConnectionLost)}
				case "client gone":
					return porttest.Script{Events: porttest.Text(req.ConversationID, "par", "tial")}
				}
				return base(req)
			}
			a := r.turn(t, textRequest(user("one")))
			next := textRequest(user("one"), assistant(a), user("two"))
			mode = how
			turn, err := r.gw.Chat(t.Context(), principal, next, nil)
			if err == nil {
				if how == "client gone" {
					_, _ = turn.Next(t.Context())
					turn.Close()
				} else {
					_, err = drain(t, turn)
				}
			}
			is.True(how == "client gone" || err != nil) // the failure is reported
			mode = ""
			r.turn(t, next)
			is.Equal(r.last().ConversationID, "")                              // the retry starts fresh
			is.Equal(r.freshReasons(), []string{"no_anchor", "after_failure"}) // because its transcript fits
		})
	}
}

func TestTheFinalAnswerOfAToolLoopIsAnchored(t *testing.T) {
	is := is.New(t)
	n := 0
	r := newConvRig(t, func(req ports.UpstreamRequest) porttest.Script {
		n++
		switch {
		case n == 1:
			return porttest.Script{Events: porttest.ToolCalls("conv-t", "grp-1", "get_weather")}
		case req.Continuation != nil:
			return porttest.Script{Events: []chat.Event{{Kind: chat.EventText, Text: "it is sunny"}}} // no conversation event
		default:
			return porttest.Script{Events: porttest.Text(req.ConversationID, "you are welcome")}
		}
	})
	first := request(user("weather?"))
	turn, err := r.gw.Chat(t.Context(), principal, first, nil)
	is.NoErr(err)
	ds, err := drain(t, turn)
	is.NoErr(err)
	withResults := echo(first.Messages, ds, "sunny")
	final := r.turn(t, request(withResults...))
	is.Equal(final, "it is sunny")
	next := append(append([]chat.Message(nil), withResults...), assistant(final), user("thanks"))
	calls := append([]chat.ToolCall(nil), next[1].ToolCalls...)
	calls[0].Arguments = strings.ReplaceAll(strings.ReplaceAll(calls[0].Arguments, `{`, `{ `), `:`, `: `) // re-serialized by the client
	next[1].ToolCalls = calls
	r.turn(t, request(next...))
	is.Equal(r.last().ConversationID, "conv-t") // the next turn continues the tool loop's conversation, arguments compared as JSON values
	is.Equal(len(r.last().Chat.Messages), 1)    // with only the new message
}

// downAnchors is an anchor store whose database is unreachable.
type downAnchors struct{ ports.AnchorStore }

func (downAnchors) Update(context.Context, string, string, func(*conversation.Anchor) (conversation.Decision, error)) (conversation.Decision, error) {
	return conversation.Decision{}, errs.New(errs.CorrelationStoreUnavailable)
}

func (downAnchors) Record(context.Context, conversation.Anchor, time.Time) error {
	return errs.New(errs.CorrelationStoreUnavailable)
}

func TestAnUnavailableAnchorStoreDegradesToFreshConversations(t *testing.T) {
	is := is.New(t)
	r := newConvRig(t, nil)
	r.gw.WithAnchors(downAnchors{r.anchors}, anchorPolicy)
	a := r.turn(t, textRequest(user("one")))
	is.Equal(a, "answer to one") // answers are unaffected
	a = r.turn(t, textRequest(user("one"), assistant(a), user("two")))
	is.Equal(a, "answer to two")
	is.Equal(r.last().ConversationID, "")                                                                                                                                                   // the lookup failed: a fresh conversation
	is.Equal(r.freshReasons(), []string{"no_anchor", "store_unavailable"})                                                                                                                  // said so
	is.True(strings.Contains(r.logs.String(), `"level":"WARN","msg":"conversation: fresh","reason":"store_unavailable","principal_slot":"default","code":"correlation_store_unavailable"`)) // a warning with the store's error
	is.True(strings.Contains(r.logs.String(), `"msg":"conversation not anchored"`))                                                                                                         // and the record failure too
}
