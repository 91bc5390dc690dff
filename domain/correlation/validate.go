package correlation

import (
	"slices"
	"strings"
	"time"

	"github.com/pmgate/pmgate/domain/canon"
	"github.com/pmgate/pmgate/domain/chat"
)

// Result is one tool result of a continuation: the public tool call id and the
// text the client sent.
type Result struct {
	ID      string
	Content string
}

// Continuation is a request whose messages end in role=tool results
// (docs/TOOL-CALLING.md): the final maximal block of tool messages, and
// everything before it.
type Continuation struct {
	Prefix  []chat.Message
	Results []Result
	// Trailing is the text the client put after its results in the same
	// message (chat.Message.Trailing of the last result): already the end of
	// that result's Content.
	Trailing string
	// Added are user (and system) messages after the results (a chat
	// completions or Responses request that answers the calls and asks
	// something new in one request); only SplitHistory sets them.
	Added []chat.Message
	// Folded: Fold put the added user messages into the last result (a
	// PENDING group taking a new user turn with its results); its tools and
	// the transcript before its calls may then differ from the group's
	// (CheckTools, CheckHistory), disclosed by the caller.
	Folded bool
}

// Fold returns c with its added user messages folded into its last result,
// after a blank line each, as the text after the results of an Anthropic
// Messages user turn (Trailing) is: the one form in which a PENDING group
// takes its results and a new user turn in one TOOL_RESPONSE (a transcript
// too long to start fresh, such as an agent's compaction request in the
// middle of a tool round; docs/CONVERSATIONS.md). c without added messages is
// returned as it is.
func (c Continuation) Fold() Continuation {
	if len(c.Added) == 0 || len(c.Results) == 0 {
		return c
	}
	var text strings.Builder
	text.WriteString(c.Trailing)
	for _, m := range c.Added {
		if m.Content == nil || *m.Content == "" {
			continue
		}
		if text.Len() > 0 {
			text.WriteString("\n\n")
		}
		text.WriteString(*m.Content)
	}
	f := c
	f.Results = append([]Result(nil), c.Results...)
	last := &f.Results[len(f.Results)-1]
	if extra := strings.TrimPrefix(text.String(), c.Trailing); extra != "" {
		if c.Trailing == "" {
			last.Content += "\n\n" + extra
		} else {
			last.Content += extra
		}
	}
	f.Trailing, f.Added, f.Folded = text.String(), nil, true
	return f
}

// SplitContinuation splits messages into the prefix and the final contiguous
// block of role=tool results. ok is false when the last message is not a tool
// result, in which case the request is a fresh turn (tool messages earlier in
// the history are then ordinary history).
func SplitContinuation(msgs []chat.Message) (c Continuation, ok bool) {
	i := len(msgs)
	for i > 0 && msgs[i-1].Role == chat.RoleTool {
		i--
	}
	if i == len(msgs) {
		return Continuation{}, false
	}
	c.Prefix = msgs[:i]
	for _, m := range msgs[i:] {
		content := ""
		if m.Content != nil {
			content = *m.Content
		}
		c.Results = append(c.Results, Result{ID: m.ToolCallID, Content: content})
	}
	c.Trailing = msgs[len(msgs)-1].Trailing
	return c, true
}

// SplitHistory splits messages that end in user (and system) messages right
// after a contiguous block of tool results: the results answer an earlier
// group and the messages after them are a new turn (chat completions and
// Responses send the user's as separate messages; Claude Code sends its
// "Environment update" as a system message after its prompt, and puts the
// prompt itself after the results in their message: Trailing). ok is false
// for any other shape, and when no user content follows the results.
func SplitHistory(msgs []chat.Message) (c Continuation, ok bool) {
	i, users := len(msgs), 0
	for i > 0 && (msgs[i-1].Role == chat.RoleUser || msgs[i-1].Role == chat.RoleSystem) {
		if msgs[i-1].Role == chat.RoleUser {
			users++
		}
		i--
	}
	if i == len(msgs) || i == 0 || msgs[i-1].Role != chat.RoleTool {
		return Continuation{}, false
	}
	c, ok = SplitContinuation(msgs[:i])
	if !ok || users == 0 && c.Trailing == "" {
		return Continuation{}, false
	}
	c.Added = msgs[i:]
	return c, true
}

// NewTurn reports whether the request carries new user content after its
// results: text after them in the same message, or user messages.
func (c Continuation) NewTurn() bool { return c.Trailing != "" || len(c.Added) > 0 }

// HistoryMessages returns the request as history plus a new user turn: the
// prefix, the results as the client first sent them (without the text after
// them), and the new user messages (the text after the results as one user
// message, or the added messages).
func (c Continuation) HistoryMessages() (history, added []chat.Message) {
	history = make([]chat.Message, 0, len(c.Prefix)+len(c.Results))
	history = append(history, c.Prefix...)
	pure := c.pure()
	for _, r := range pure.Results {
		content := r.Content
		history = append(history, chat.Message{Role: chat.RoleTool, ToolCallID: r.ID, Content: &content})
	}
	if c.Trailing != "" {
		t := c.Trailing
		added = append(added, chat.Message{Role: chat.RoleUser, Content: &t})
	}
	return history, append(added, c.Added...)
}

// pure returns c with the text after the results taken off the last result.
func (c Continuation) pure() Continuation {
	if c.Trailing == "" || len(c.Results) == 0 {
		return c
	}
	rs := slices.Clone(c.Results)
	last := &rs[len(rs)-1]
	last.Content = strings.TrimSuffix(strings.TrimSuffix(last.Content, c.Trailing), "\n\n")
	c.Results, c.Trailing = rs, ""
	return c
}

// IDs returns the distinct tool call ids of the results, in first-seen order.
func (c Continuation) IDs() []string {
	seen := make(map[string]bool, len(c.Results))
	var out []string
	for _, r := range c.Results {
		if !seen[r.ID] {
			seen[r.ID] = true
			out = append(out, r.ID)
		}
	}
	return out
}

// Submission is one continuation request as seen by one group after lookup.
type Submission struct {
	PrincipalID string
	WorkspaceID string // server-selected for the authenticated credential
	Model       string
	ToolsHash   string // canon.ToolsBinding of the request's API and tools
	// LegacyToolsHash is canon.ToolsHash of the request's tools and
	// tool_choice: the form records of earlier builds hold.
	LegacyToolsHash string
	Continuation    Continuation
	// Echo is Continuation.Prefix prepared with canon.PrepareEcho and the
	// defaults of the request's tools, once, before the store's atomic section
	// (hashing is the costly part of validation); nil means "prepare it here
	// with Defaults".
	Echo *canon.Echo
	// Defaults are the schema defaults of the request's tools
	// (canon.ToolDefaults); only read when Echo is nil.
	Defaults canon.DefaultsByTool
	// ResultsHash is ResultsHash(Continuation), precomputed likewise; empty
	// means "compute it here".
	ResultsHash string
	// PureResultsHash is PureResultsHash(Continuation), precomputed likewise;
	// empty means "compute it here".
	PureResultsHash string
	// Unresolved counts result ids that resolve to no group of this principal.
	Unresolved int
	// OtherGroups counts distinct groups, other than this one, that result ids
	// resolve to.
	OtherGroups int
	// EarlierHistory: the caller answers a PENDING group's calls although the
	// transcript before them changed (an agent compacted it before sending
	// the results): they go up in the conversation that holds the history
	// they were issued in, disclosed. Every other step still applies.
	EarlierHistory bool
}

// Step is one continuation validation step (docs/CORRELATION.md) as a pure function; it
// returns the event of its failure (whose row carries the code) or "".
type Step struct {
	Name  string
	Check func(g Group, s Submission) Event
}

// Steps are the validation steps in the order they are applied. Structural
// checks (400) come before binding checks (409); within them the numbering of
// docs/CORRELATION.md is kept, except that step 7 (results are the contiguous final
// suffix) is checked before step 6 (history), so that a misplaced result is
// reported as such rather than as a history change.
var Steps = []Step{
	{"3 resolve every id for this principal", CheckResolved},
	{"4 one group", CheckOneGroup},
	{"5 exactly one result per call", CheckComplete},
	{"7 results are the contiguous final suffix", CheckContiguous},
	{"6 same transcript prefix, arguments as JSON values", CheckHistory},
	{"8 same model", CheckModel},
	{"9 same workspace", CheckWorkspace},
	{stepTools, CheckTools},
}

// CheckResolved is step 3: every id resolves for this principal.
func CheckResolved(g Group, s Submission) Event {
	if s.Unresolved > 0 || s.PrincipalID != g.PrincipalID {
		return SubmitUnknownID
	}
	return ""
}

// CheckOneGroup is step 4: all ids resolve to this one group.
func CheckOneGroup(_ Group, s Submission) Event {
	if s.OtherGroups > 0 {
		return SubmitGroupMismatch
	}
	return ""
}

// CheckComplete is step 5: no duplicate or extra result, then no missing one.
func CheckComplete(g Group, s Submission) Event {
	calls := make(map[string]bool, len(g.Calls))
	for _, c := range g.Calls {
		calls[c.PublicID] = true
	}
	seen := make(map[string]bool, len(s.Continuation.Results))
	for _, r := range s.Continuation.Results {
		if seen[r.ID] || !calls[r.ID] {
			return SubmitGroupMismatch
		}
		seen[r.ID] = true
	}
	if len(seen) != len(g.Calls) {
		return SubmitIncomplete
	}
	return ""
}

// CheckContiguous is step 7: no result for this group appears before the final
// block, so no new message accompanies the results.
func CheckContiguous(g Group, s Submission) Event {
	calls := make(map[string]bool, len(g.Calls))
	for _, c := range g.Calls {
		calls[c.PublicID] = true
	}
	for _, m := range s.Continuation.Prefix {
		if m.Role == chat.RoleTool && calls[m.ToolCallID] {
			return SubmitGroupMismatch
		}
	}
	return ""
}

// CheckHistory is step 6: the prefix equals the stored transcript prefix
// under the rules of the stored hash's form. For a value-form record (every
// group admitted by this build) the prefix is hashed in value form after
// dropping the properties the echo added with their schema default, relative
// to the issued arguments the record keeps (canon, "Echoed arguments"). A
// record stored by an earlier build holds an exact-form hash and is compared
// under the exact rules it was written with, so a rolling deploy neither
// refuses a byte-identical echo of it nor relaxes it after the fact. Any other
// form fails closed.
func CheckHistory(g Group, s Submission) Event {
	if s.Continuation.Folded || s.EarlierHistory {
		// The transcript before the calls changed (an agent compacted it
		// before sending a pending result, or the user edited it): the
		// results answer the calls in the conversation that holds the
		// history they were issued in, disclosed (SameHistory). The calls
		// themselves must still be echoed as issued.
		return checkCalls(g, s)
	}
	return checkHistory(g, s)
}

// checkCalls is step 6 for the last message alone: the assistant message
// before the results echoes exactly the calls g issued (arguments as JSON
// values, echo-added defaults dropped), whatever its text.
func checkCalls(g Group, s Submission) Event {
	prefix := s.Continuation.Prefix
	if len(prefix) == 0 || prefix[len(prefix)-1].Role != chat.RoleAssistant {
		return SubmitHistoryMismatch
	}
	issued := g.IssuedCalls()
	calls := make([]chat.ToolCall, len(issued))
	for i, c := range issued {
		calls[i] = chat.ToolCall{ID: c.ID, Name: c.Name, Arguments: c.Arguments}
	}
	hash := func(tc []chat.ToolCall) (string, error) {
		e, err := canon.PrepareEcho([]chat.Message{{Role: chat.RoleAssistant, ToolCalls: tc}}, s.Defaults)
		if err != nil {
			return "", err
		}
		return e.Hash(issued)
	}
	echoed, err := hash(prefix[len(prefix)-1].ToolCalls)
	if err != nil {
		return SubmitHistoryMismatch
	}
	if want, err := hash(calls); err != nil || echoed != want {
		return SubmitHistoryMismatch
	}
	return ""
}

// SameHistory reports whether s echoes the transcript g's calls were issued
// in (step 6), folded or not.
func SameHistory(g Group, s Submission) bool { return checkHistory(g, s) == "" }

func checkHistory(g Group, s Submission) Event {
	if len(s.Continuation.Prefix) != g.TranscriptLength {
		return SubmitHistoryMismatch
	}
	var h string
	var err error
	switch canon.FormOf(g.TranscriptHash) {
	case canon.TranscriptValues:
		e := s.Echo
		if e == nil {
			if e, err = canon.PrepareEcho(s.Continuation.Prefix, s.Defaults); err != nil {
				return SubmitHistoryMismatch
			}
		}
		h, err = e.Hash(g.IssuedCalls())
	case canon.TranscriptExact:
		h, err = canon.TranscriptHash(s.Continuation.Prefix)
	default:
		return SubmitHistoryMismatch
	}
	if err != nil || h != g.TranscriptHash {
		return SubmitHistoryMismatch
	}
	return ""
}

// CheckModel is step 8.
func CheckModel(g Group, s Submission) Event {
	if s.Model != g.Model {
		return SubmitModelMismatch
	}
	return ""
}

// CheckWorkspace is the workspace half of step 9.
func CheckWorkspace(g Group, s Submission) Event {
	if s.WorkspaceID != g.WorkspaceID {
		return SubmitWorkspaceMismatch
	}
	return ""
}

// CheckTools is the tools half of step 9: the same tool definitions, through
// the same API (canon.ToolsBinding; tool_choice may change between turns). A
// record stored by an earlier build holds the older form, which also bound
// tool_choice, and is compared under it.
func CheckTools(g Group, s Submission) Event {
	if s.Continuation.Folded {
		return "" // only a new user turn folded into the results (Fold) may change them
	}
	want := s.ToolsHash
	if !canon.IsToolsBinding(g.ToolsHash) {
		want = s.LegacyToolsHash
	}
	if want == "" || want != g.ToolsHash {
		return SubmitToolsMismatch
	}
	return ""
}

// Validate runs every step in order and returns the first failure's event, or
// "" when the submission passes every step.
func Validate(g Group, s Submission) Event {
	for _, st := range Steps {
		if ev := st.Check(g, s); ev != "" {
			return ev
		}
	}
	return ""
}

// ResultsHash is the acceptedResultsHash of a submission: its (id, content)
// pairs ordered by public id, so a retry that reorders the results is the same
// submission. It depends on the submission alone, so callers compute it once,
// before the store's atomic section (Submission.ResultsHash). For a valid
// submission (each call exactly once) ordering by id and by call order define
// the same equality.
func ResultsHash(c Continuation) string {
	rs := make([]canon.Result, len(c.Results))
	for i, r := range c.Results {
		rs[i] = canon.Result{PublicID: r.ID, Content: r.Content}
	}
	slices.SortStableFunc(rs, func(a, b canon.Result) int { return strings.Compare(a.PublicID, b.PublicID) })
	h, err := canon.ResultsHash(rs)
	if err != nil {
		return "" // invalid UTF-8 cannot be accepted; "" never equals a stored hash
	}
	return h
}

// PureResultsHash is ResultsHash of the results without the text the client
// put after them (Continuation.Trailing): what "the same results" means when
// a later request carries them as history before a new user turn.
func PureResultsHash(c Continuation) string { return ResultsHash(c.pure()) }

// resultsHash returns the precomputed hash of s, or computes it.
func (s Submission) resultsHash() string {
	if s.ResultsHash != "" {
		return s.ResultsHash
	}
	return ResultsHash(s.Continuation)
}

// pureResultsHash returns the precomputed pure hash of s, or computes it.
func (s Submission) pureResultsHash() string {
	if s.Continuation.Trailing == "" {
		return s.resultsHash()
	}
	if s.PureResultsHash != "" {
		return s.PureResultsHash
	}
	return PureResultsHash(s.Continuation)
}

// acceptedSep separates the two hashes of an accepted submission that had
// text after its results: the exact one (what a retry must equal) and the
// pure one (what a later request that carries the results as history must
// equal). A hash never contains it.
const acceptedSep = "|"

// acceptedHashes is what a claim stores as the group's accepted results: the
// exact hash, followed by the pure one when they differ.
func acceptedHashes(exact, pure string) string {
	if pure == "" || pure == exact {
		return exact
	}
	return exact + acceptedSep + pure
}

// splitAccepted returns the exact and the pure hash of a stored accepted
// results hash (one and the same for results without text after them, and
// for records of earlier builds).
func splitAccepted(stored string) (exact, pure string) {
	if i := strings.Index(stored, acceptedSep); i >= 0 {
		return stored[:i], stored[i+len(acceptedSep):]
	}
	return stored, stored
}

// Classify maps a submission against g at now to the machine event, in the
// order documented on Table. For SubmitValid it also returns the results hash
// to store with the claim.
func Classify(g Group, s Submission, now time.Time) (Event, string) {
	if ev, due := g.Due(now); due && ev == Deadline {
		return Deadline, ""
	}
	switch g.State {
	case Pending:
		if ev := Validate(g, s); ev != "" {
			return ev, ""
		}
		h := s.resultsHash()
		if h == "" {
			return SubmitGroupMismatch, ""
		}
		return SubmitValid, acceptedHashes(h, s.pureResultsHash())
	case Inflight, Consumed:
		exact, pure := splitAccepted(g.AcceptedResultsHash)
		h := s.resultsHash()
		same := h != "" && h == exact && len(s.Continuation.Added) == 0
		if same && g.State == Consumed && g.TerminalResponseDigest == GateDigest && validateHistory(g, s) == "" {
			return SubmitSameGated, ""
		}
		if same && Validate(g, s) == "" {
			return SubmitSame, ""
		}
		if isHistory(s, pure) && validateHistory(g, s) == "" {
			return SubmitHistory, ""
		}
		return SubmitDifferent, ""
	case Uncertain:
		if _, pure := splitAccepted(g.AcceptedResultsHash); isHistory(s, pure) && validateHistory(g, s) == "" {
			return SubmitHistory, ""
		}
		return SubmitAny, ""
	default:
		return SubmitAny, ""
	}
}

// validateHistory is Validate for results that are history: every step but
// the tools, and step 6 for the echoed calls alone. The results are never
// sent again and only the new user content goes up, with the request's own
// tools, so a request that changed only its tool set (an agent's compaction
// request offers none), or the transcript before the calls (it compacted),
// is the same history.
func validateHistory(g Group, s Submission) Event {
	// The transcript before the calls may have changed too (an agent that
	// compacted it): the calls themselves must still be echoed as issued.
	s.EarlierHistory = true
	for _, st := range Steps {
		if st.Name == stepTools {
			continue
		}
		if ev := st.Check(g, s); ev != "" {
			return ev
		}
	}
	return ""
}

// stepTools names the step validateHistory leaves out.
const stepTools = "9 same tools"

// isHistory reports whether s carries the accepted results (pure: their hash
// without the text after them) followed by new user content.
func isHistory(s Submission, pure string) bool {
	if !s.Continuation.NewTurn() || pure == "" {
		return false
	}
	h := s.pureResultsHash()
	return h != "" && h == pure
}
