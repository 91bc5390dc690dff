package ports

import "context"

// A stream's output is written in as few writes as possible without ever
// delaying an event: the inbound adapter holds what it has rendered and
// writes it when the turn is about to wait, which only the adapter that reads
// the upstream can tell. Events that arrived in one upstream read then reach
// the client in one write; an event followed by silence is written before the
// silence.
//
// The inbound adapter puts its write on the request's context
// (WithBeforeWait); the upstream adapter calls BeforeWait right before every
// read that may block. The hook runs on the goroutine that reads the turn.

type beforeWaitKey struct{}

// WithBeforeWait returns ctx carrying fn, to be called before the turn waits.
func WithBeforeWait(ctx context.Context, fn func()) context.Context {
	return context.WithValue(ctx, beforeWaitKey{}, fn)
}

// BeforeWaitFunc returns the hook ctx carries, or nil: a reader that reads
// many times in one call (the Postman adapter's Next) looks it up once per
// call.
func BeforeWaitFunc(ctx context.Context) func() {
	fn, _ := ctx.Value(beforeWaitKey{}).(func())
	return fn
}

// BeforeWait calls the hook ctx carries, if any.
func BeforeWait(ctx context.Context) {
	if fn := BeforeWaitFunc(ctx); fn != nil {
		fn()
	}
}
