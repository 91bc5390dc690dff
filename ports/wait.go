package ports

// A stream's output is written in as few writes as possible without ever
// delaying an event: the inbound adapter holds what it has rendered and
// writes it when the turn is about to wait, which only the adapter that reads
// the upstream can tell. Events that arrived in one upstream read then reach
// the client in one write; an event followed by silence is written before the
// silence.
//
// The upstream adapter's stream says so (Buffered); the turn reads only
// buffered events when asked to try (app.TryTurn) and tells the inbound
// adapter when it would wait, which then writes what it holds before it
// waits. Nothing travels in the request's context.

// Buffered is implemented by a Stream that can tell whether its next event is
// at hand: Buffered reports whether Next returns without reading from the
// upstream (an event decoded from an earlier read, or the stream's end). It
// is called on the goroutine that reads the stream, between calls of Next.
// A stream that is not Buffered is taken to wait before every event.
type Buffered interface {
	Buffered() bool
}

// IsBuffered reports whether s is Buffered and says its next event is at
// hand. A wrapping stream passes it on: Buffered() bool { return
// ports.IsBuffered(inner) }.
func IsBuffered(s Stream) bool {
	b, ok := s.(Buffered)
	return ok && b.Buffered()
}
