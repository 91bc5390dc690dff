package emulator

// ActiveHandlers reports the number of handlers still running (tests only).
func (s *Server) ActiveHandlers() int { return int(s.active.Load()) }
