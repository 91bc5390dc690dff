package chat

import "strings"

// ToolCallSet folds the tool-call deltas of one stream into whole calls. It is
// the one place deltas become calls: an upstream adapter only decides which
// call a wire fragment belongs to (the delta's Index) and keeps no argument
// bytes of its own once a call is announced; the consumer of the stream (the
// application's turn) holds the calls in a ToolCallSet until the stream's end
// is proven. The zero value is empty and ready to use.
type ToolCallSet struct {
	calls   []StreamedCall
	byIndex map[int]int
}

// StreamedCall is one whole upstream tool call as its deltas told it: the
// private ids and the client's name from its first delta (the group id from
// the first delta that had one), and the argument fragments in order.
type StreamedCall struct {
	Index           int
	UpstreamID      string
	Synthetic       bool
	UpstreamGroupID string
	Name            string
	// Fragments are the non-empty argument fragments, in order, as the
	// upstream split them; they concatenate to Arguments().
	Fragments []string
}

// Arguments is the exact argument string of the call.
func (c StreamedCall) Arguments() string { return strings.Join(c.Fragments, "") }

// Add folds one delta into the call of its Index, starting the call when the
// index is new.
func (s *ToolCallSet) Add(d ToolCallDelta) {
	i, ok := s.byIndex[d.Index]
	if !ok {
		if s.byIndex == nil {
			s.byIndex = map[int]int{}
		}
		i = len(s.calls)
		s.byIndex[d.Index] = i
		s.calls = append(s.calls, StreamedCall{Index: d.Index, UpstreamID: d.UpstreamID, Synthetic: d.Synthetic,
			UpstreamGroupID: d.UpstreamGroupID, Name: d.Name})
	}
	c := &s.calls[i]
	if c.UpstreamGroupID == "" {
		c.UpstreamGroupID = d.UpstreamGroupID
	}
	if d.ArgumentsFragment != "" {
		c.Fragments = append(c.Fragments, d.ArgumentsFragment)
	}
}

// Len is the number of calls so far.
func (s *ToolCallSet) Len() int { return len(s.calls) }

// Calls returns the calls in the order their first deltas came. The slice is
// the set's own: the caller must not change it.
func (s *ToolCallSet) Calls() []StreamedCall { return s.calls }
