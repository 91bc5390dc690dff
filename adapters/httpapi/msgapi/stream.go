package msgapi

import (
	"context"
	"net/http"
	"time"

	"github.com/pmgate/pmgate/adapters/httpapi/answer"
	"github.com/pmgate/pmgate/adapters/httpapi/sse"
	"github.com/pmgate/pmgate/adapters/httpapi/sse/msgsse"
)

// DefaultPingInterval is how often a stream with nothing to say sends
// event: ping, so that clients' idle timers see bytes during long upstream
// silences.
const DefaultPingInterval = 10 * time.Second

// streamMessage renders a turn as the Messages event stream (answer.Drive):
// message_delta and message_stop come only after the proven end, a failure
// after the headers is one event: error. While the upstream is silent, ping
// events keep the connection alive.
func streamMessage(w http.ResponseWriter, ctx context.Context, o msgOutput, tr *answer.Reader, env Env) error {
	m := &msgStream{env: env, o: o, ms: msgsse.New(sse.New(w, answer.StreamUsageHeader(env.EstimatesOff))), sc: answer.NewStopScanner(o.req.stops)}
	// The turn is read on this goroutine; pings come from a timer's (the
	// emitter serializes them), and after the handler's end (Close) the
	// timer writes nothing.
	interval := env.PingInterval
	if interval <= 0 {
		interval = DefaultPingInterval
	}
	// The timer may fire before AfterFunc has returned (a short interval, a
	// loaded machine): its function waits until ping is set.
	var ping *time.Timer
	armed := make(chan struct{})
	ping = time.AfterFunc(interval, func() {
		<-armed
		if m.ms.Ping() {
			ping.Reset(interval)
		}
	})
	close(armed)
	defer func() {
		m.ms.Close()
		ping.Stop()
	}()
	return answer.Drive(ctx, tr, m)
}

// msgStream is a turn rendered through the Messages emitter, its text cut
// at the request's stop sequences.
type msgStream struct {
	env Env
	o   msgOutput
	ms  *msgsse.Stream
	sc  *answer.StopScanner
}

func (m *msgStream) Opened() bool { return m.ms.Started() }

// open: message_start's input count is the estimate, unless estimates are off.
func (m *msgStream) Open() error {
	var input int64
	if !m.env.EstimatesOff {
		input = m.o.req.estimate
	}
	return m.ms.Start(m.o.id, m.o.req.Chat.Model, input)
}

func (m *msgStream) Step(st answer.Step) error {
	text, c := m.sc.Step(st)
	if err := m.ms.Text(text); err != nil || c == nil {
		return err
	}
	if st.First {
		if err := m.ms.Text(m.sc.Flush()); err != nil {
			return err
		}
		if err := m.ms.ToolUse(c.ID, c.Name); err != nil {
			return err
		}
	}
	return m.ms.Input(c.Arguments)
}

func (m *msgStream) Finish(ctx context.Context, tr *answer.Reader) error {
	if !m.ms.Started() {
		return answer.ErrNothingProven()
	}
	if m.sc.Matched == nil {
		if err := m.ms.Text(m.sc.Flush()); err != nil {
			return err
		}
	}
	return m.ms.Stop(m.sc.Matched, msgUsageOf(tr.Usage(m.o.req.Chat, m.env.EstimatesOff, nil)))
}

func (m *msgStream) Flush() error { return m.ms.Flush() }

func (m *msgStream) Fail(ctx context.Context, err error) error {
	errObj, requestID := m.env.Fail(ctx, err)
	return m.ms.Fail(errObj, requestID)
}
