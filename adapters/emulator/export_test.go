package emulator

// ActiveHandlers reports the number of handlers still running (tests only).
func (s *Server) ActiveHandlers() int { return int(s.active.Load()) }

// ArgumentsFor exposes the argument builder (tests only).
func ArgumentsFor(params []byte) (string, bool) { return argumentsFor(params) }
