package emulator

import (
	"crypto/rand"
	"encoding/hex"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"unicode/utf8"

	"github.com/pmgate/pmgate/domain/chat"
	"github.com/pmgate/pmgate/domain/structured"
)

const (
	replyPrefix  = "Hello from the pmgate emulator. You said: "
	resultPrefix = "Tool results received: "
	quoteBytes   = 200
	// queryLimitText is the service's reported wording for an over-long query
	// (%d is the limit).
	queryLimitText = "Agent Mode accepts upto %d characters as input."
)

// againPrefix starts the reply to a USER_QUERY that continues a known
// conversation: the emulator answers from what it holds.
func againPrefix(turn int) string {
	return "Hello again from the pmgate emulator (turn " + strconv.Itoa(turn) + " of this conversation). You said: "
}

// failureData is the data of an in-stream failure event.
type failureData struct {
	ErrorType   string `json:"errorType"`
	Message     string `json:"message,omitempty"`
	UserMessage string `json:"userMessage,omitempty"`
}

var (
	failConversationNotFound = &failureData{ErrorType: "CONVERSATION_NOT_FOUND", Message: "Conversation not found"}
	failToolCallNotFound     = &failureData{ErrorType: "TOOL_CALL_NOT_FOUND", Message: "Looks like I lost my way. Try sending a new message."}
	failForbiddenInput       = &failureData{ErrorType: "INPUT_VALIDATION_ERROR", Message: "Forbidden"}
)

type toolCall struct {
	id    string
	index int
	name  string
	args  string
}

type toolGroup struct {
	id       string
	calls    []toolCall
	parallel bool // issued with isParallelToolCallingSupported: the answer must be the array form
}

type quotedResult struct {
	name    string
	content string
}

// conversation is the emulator's memory of one upstream conversation.
type conversation struct {
	strategy string     // a conversation belongs to the account (strategy) that made it
	pending  *toolGroup // the group awaiting its TOOL_RESPONSE, nil when none
	// earlier is a group a USER_QUERY went past while it was pending, still
	// answerable when the conversation keeps pending groups (keep); nil when
	// none.
	earlier  *toolGroup
	keep     bool   // a USER_QUERY keeps the pending group answerable (PendingKept)
	rounds   int    // tool rounds asked for by the last USER_QUERY (#loop)
	tool     string // the tools the last USER_QUERY asked to be called (#tool=A[,B]), "" for the default
	used     int    // tool rounds already issued
	results  []quotedResult
	turns    int    // USER_QUERY turns of this conversation
	approval int    // consecutive tool rounds after which the next round is a loop-approval gate (0: never)
	gated    int    // consecutive tool rounds issued since the last USER_QUERY or gate, for the gate
	answer   string // the answer template of the opening query ("" when none), see answerTemplate
	usage    string // what its usage events count: UsagePerRequest or UsagePerConversation
	context  int    // tokens of every exchange of the conversation so far (prompt and output)
	// output is the structured output the last USER_QUERY asked for (the
	// gateway's instruction), "" for text; outSchema its schema (nil for
	// none) and outScenario the structured_* scenario of that query.
	output      chat.OutputKind
	outSchema   []byte
	outScenario string
}

// turn is what one accepted request produces before the scenario shapes it.
type turn struct {
	convID   string       // "" when no conversation is involved
	failure  *failureData // an in-stream failure ends the turn
	group    *toolGroup   // a tool turn
	reply    string       // a text turn
	approval bool         // the loop-approval gate instead of a tool round
	// gateRounds and gateAfter are the gate's counter and threshold (the
	// consecutive tool rounds, and the N they reached), for its event.
	gateRounds, gateAfter int
	// contextTokens is the conversation's tokens before this exchange, added
	// to the prompt of its usage (UsagePerConversation); 0 per request.
	contextTokens int
	turnNo        int  // the conversation's USER_QUERY turn number (USER_QUERY only)
	repeated      bool // the group repeats calls whose answer was not accepted
	// textChunks is the "#text_chunks=N" directive of a USER_QUERY: its text
	// is sent as exactly that many chunks (0: as split, see fitChunks).
	textChunks int
}

// runTurn applies a validated request to the conversation table. toolName is
// the #tool directive of a USER_QUERY. allowTools is false for scenarios that
// always answer with text.
func (s *Server) runTurn(strategy string, req *chatRequest, loop, approval int, toolName string, allowTools bool, scenario, usage string) turn {
	if req.extraGroups {
		return turn{failure: failForbiddenInput}
	}
	s.convMu.Lock()
	defer s.convMu.Unlock()

	id := req.conversationID
	var c *conversation
	if req.chatType == KindUserQuery && id == "" {
		id = "conv-" + randomHex(8)
		c = &conversation{strategy: strategy, keep: s.cfg.PendingOnQuery == PendingKept}
		s.addConversation(id, c)
	} else if c = s.convs[id]; id == "" || c == nil || c.strategy != strategy {
		return turn{failure: failConversationNotFound}
	}
	t := turn{convID: id}
	if req.chatType == KindUserQuery {
		c.usage = usage
	}
	if c.usage == UsagePerConversation {
		t.contextTokens = c.context
	}

	if req.chatType == KindUserQuery {
		if req.pending != "" {
			c.keep = req.pending == PendingKept
		}
		// A new user turn abandons any pending group and restarts the loop;
		// a conversation that keeps pending groups keeps it answerable.
		if !c.keep {
			c.earlier = nil
		} else if c.pending != nil {
			c.earlier = c.pending
		}
		c.pending, c.rounds, c.used, c.results, c.tool = nil, loop, 0, nil, toolName
		c.answer = answerTemplate(req.query)
		c.output, c.outSchema, _ = structured.FromQuery(req.query)
		c.outScenario = "" // the query's structured_* scenario, kept for the answer at the end of its tool loop
		if structuredScenarios[scenario] {
			c.outScenario = scenario
		}
		c.turns++
		t.turnNo = c.turns
		c.gated = 0 // a user turn starts a new run of consecutive tool rounds
		if approval > 0 {
			c.approval = approval
		}
	} else {
		p := c.pending
		late := false
		answers := func(g *toolGroup) bool {
			return g != nil && groupMatches(strategy, req.cont.groupID, g.id) && answersExactly(g, req.cont.results)
		}
		if answers(c.earlier) && !answers(p) {
			// The answer to a group a USER_QUERY went past (keep).
			p, late = c.earlier, true
		}
		if strategy == StrategyWebSession && req.cont.grouped && req.cont.groupID == "" {
			// The array form on web_session needs its group: ps2Api's traces
			// show toolResponses[] with a toolCallGroupId accepted on _gw/chat
			// (529 doc §3.2, measured 2026-08-27), where TT, whose body had
			// none, reports it Forbidden.
			t.failure = failForbiddenInput
			return t
		}
		if p == nil || !groupMatches(strategy, req.cont.groupID, p.id) {
			t.failure = failToolCallNotFound
			return t
		}
		switch {
		case p.parallel && !req.cont.grouped:
			// With parallel calling on, the service expects the group answered
			// through toolResponses[]; a flat answer leaves it unanswered and
			// the model asks again (reported by one public project).
			t.group = reissue(p)
			t.repeated = true
			c.pending = t.group
			return t
		case !p.parallel && req.cont.grouped && strategy == StrategyWebSession:
			t.failure = failForbiddenInput // the array form without parallel calling: Forbidden
			return t
		}
		if !answersExactly(p, req.cont.results) {
			t.failure = failToolCallNotFound
			return t
		}
		if late {
			c.earlier = nil
		} else {
			c.pending = nil
		}
		content := make(map[string]string, len(req.cont.results))
		for _, r := range req.cont.results {
			content[r.id] = r.content
		}
		for _, call := range p.calls {
			c.results = append(c.results, quotedResult{name: call.name, content: content[call.id]})
		}
	}

	// The agent-loop guard: after N consecutive tool rounds the next one is
	// not issued; the results just accepted stay consumed (nothing pending),
	// and only a new USER_QUERY goes on.
	gate := func() turn {
		t.approval, t.gateRounds, t.gateAfter = true, c.gated, c.approval
		c.gated = 0
		return t
	}
	if allowTools && len(req.tools) > 0 && req.autoRun && c.used < c.rounds {
		if c.approval > 0 && c.gated >= c.approval {
			return gate()
		}
		t.group = newGroup(req, namedTools(req.tools, c.tool))
		c.pending = t.group
		c.used++
		c.gated++
		return t
	}
	if missing := missingTools(c.answer, c.results, req.tools); allowTools && req.autoRun && len(missing) > 0 &&
		req.chatType == KindToolResponse {
		if c.approval > 0 && c.gated >= c.approval {
			return gate()
		}
		// Like a model following the answer instruction: ask for the tools the
		// template names that have not answered yet (at most once each).
		t.group = newGroup(req, missing)
		c.pending = t.group
		c.gated++
		return t
	}
	a, filled := fillAnswer(c.answer, c.results)
	switch {
	case req.chatType == KindUserQuery && c.turns > 1:
		t.reply = againPrefix(c.turns) + truncateUTF8(req.query, quoteBytes)
	case req.chatType == KindUserQuery:
		t.reply = replyPrefix + truncateUTF8(req.query, quoteBytes)
	case filled:
		t.reply = a
	default:
		t.reply = quoteResults(c.results)
	}
	if c.output != chat.OutputText {
		if structuredScenarios[scenario] { // a tool result's own scenario changes the answer too
			c.outScenario = scenario
		}
		t.reply = structuredReply(c.output, c.outSchema, c.outScenario)
	}
	return t
}

// answerRE finds the instruction `reply with exactly this line and nothing
// else: KEY=<result of TOOL>;KEY=<result of TOOL>…` that `gateway probe` puts in
// its tool-loop query (the emulator's stand-in for a model that follows it).
var answerRE = sync.OnceValue(func() *regexp.Regexp {
	return regexp.MustCompile(`reply with exactly this line and nothing else: ((?:[A-Za-z0-9_]+=<result of [A-Za-z0-9_-]+>;?)+)`)
})

// answerSlotRE is one KEY=<result of TOOL> slot of the template.
var answerSlotRE = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`<result of ([A-Za-z0-9_-]+)>`) })

// answerTemplate returns the answer template of a query, or "".
func answerTemplate(query string) string {
	if m := answerRE().FindStringSubmatch(query); m != nil {
		return strings.TrimSuffix(m[1], ";")
	}
	return ""
}

// fillAnswer replaces every <result of TOOL> slot of the template with the last
// result of that tool; ok is false when there is no template or a tool has not
// answered yet (then the emulator quotes the results as usual).
func fillAnswer(template string, results []quotedResult) (string, bool) {
	if template == "" {
		return "", false
	}
	last := map[string]string{}
	for _, r := range results {
		last[r.name] = r.content
	}
	ok := true
	out := answerSlotRE().ReplaceAllStringFunc(template, func(slot string) string {
		name := answerSlotRE().FindStringSubmatch(slot)[1]
		v, found := last[name]
		if !found {
			ok = false
		}
		return v
	})
	return out, ok
}

// groupMatches checks the continuation's toolCallGroupId: web_session requires
// it; the access_token singular flat form may omit it.
func groupMatches(strategy, got, want string) bool {
	if got == "" {
		return strategy == StrategyAccessToken
	}
	return got == want
}

// answersExactly reports whether results answer every call of g once and nothing else.
func answersExactly(g *toolGroup, results []toolResult) bool {
	if len(results) != len(g.calls) {
		return false
	}
	want := make(map[string]bool, len(g.calls))
	for _, c := range g.calls {
		want[c.id] = true
	}
	for _, r := range results {
		if !want[r.id] {
			return false // unknown or duplicate
		}
		delete(want, r.id)
	}
	return true
}

// newGroup calls the first tool, or the first two when parallel calling is on
// and at least two tools are offered. With only set, it calls those of the
// offered tools instead (the first of them without parallel calling).
func newGroup(req *chatRequest, only []tool) *toolGroup {
	offered := req.tools
	if only != nil {
		offered = only
	}
	n := 1
	if req.parallel && len(offered) >= 2 {
		n = 2
	}
	g := &toolGroup{id: "grp-" + randomHex(8), parallel: req.parallel}
	for i, t := range offered[:n] {
		g.calls = append(g.calls, toolCall{id: "tc-" + randomHex(8), index: i, name: t.name, args: t.args})
	}
	return g
}

// namedTools returns the offered tools a "#tool=A[,B]" directive names, in the
// directive's order; nil without a directive or when none of them is offered
// (then the first tools are called).
func namedTools(offered []tool, names string) []tool {
	var out []tool
	for _, name := range strings.Split(names, ",") {
		for _, t := range offered {
			if name != "" && t.name == name {
				out = append(out, t)
				break
			}
		}
	}
	return out
}

// missingTools returns the offered tools that the answer template names and
// that have no result yet, in the offered order.
func missingTools(template string, results []quotedResult, offered []tool) []tool {
	if template == "" {
		return nil
	}
	answered := map[string]bool{}
	for _, r := range results {
		answered[r.name] = true
	}
	named := map[string]bool{}
	for _, m := range answerSlotRE().FindAllStringSubmatch(template, -1) {
		named[m[1]] = true
	}
	var out []tool
	for _, t := range offered {
		if named[t.name] && !answered[t.name] {
			out = append(out, t)
		}
	}
	return out
}

// reissue repeats a group's calls under fresh ids.
func reissue(p *toolGroup) *toolGroup {
	g := &toolGroup{id: "grp-" + randomHex(8), parallel: p.parallel}
	for _, c := range p.calls {
		c.id = "tc-" + randomHex(8)
		g.calls = append(g.calls, c)
	}
	return g
}

// utf16Len counts s as JavaScript's String.length does.
func utf16Len(s string) int {
	n := 0
	for _, r := range s {
		if r >= 0x10000 {
			n += 2
		} else {
			n++
		}
	}
	return n
}

func quoteResults(results []quotedResult) string {
	parts := make([]string, len(results))
	for i, r := range results {
		parts[i] = r.name + "=" + truncateUTF8(r.content, quoteBytes)
	}
	return resultPrefix + strings.Join(parts, "; ")
}

// addConversation stores c, forgetting the oldest conversation beyond the bound.
// The caller holds convMu.
// addContext adds one exchange's tokens to its conversation's context.
func (s *Server) addContext(id string, tokens int) {
	s.convMu.Lock()
	defer s.convMu.Unlock()
	if c := s.convs[id]; c != nil {
		c.context += tokens
	}
}

func (s *Server) addConversation(id string, c *conversation) {
	s.convs[id] = c
	s.convOrder = append(s.convOrder, id)
	for len(s.convOrder) > maxConversations {
		delete(s.convs, s.convOrder[0])
		s.convOrder = s.convOrder[1:]
	}
}

func randomHex(n int) string {
	b := make([]byte, n)
	_, _ = rand.Read(b) // never fails (crypto/rand)
	return hex.EncodeToString(b)
}

// truncateUTF8 cuts s to at most n bytes without splitting a character.
func truncateUTF8(s string, n int) string {
	if len(s) <= n {
		return s
	}
	for n > 0 && !utf8.RuneStart(s[n]) {
		n--
	}
	return s[:n]
}

// fitChunks makes pieces exactly n long (n > 0): the first n pieces, or the
// pieces repeated in order until there are n. A reply's length then no longer
// bounds the number of text events (the quote is at most quoteBytes), which a
// load test needs to measure the cost of each further event. n == 0 or no
// pieces leaves them as they are.
func fitChunks(pieces []string, n int) []string {
	if n <= 0 || len(pieces) == 0 || len(pieces) == n {
		return pieces
	}
	if len(pieces) > n {
		return pieces[:n]
	}
	out := make([]string, n)
	for i := range out {
		out[i] = pieces[i%len(pieces)]
	}
	return out
}

// splitUTF8 cuts s into pieces of at most n bytes on character boundaries (a
// character longer than n is one piece).
func splitUTF8(s string, n int) []string {
	var out []string
	for len(s) > n {
		cut := len(truncateUTF8(s, n))
		if cut == 0 {
			_, cut = utf8.DecodeRuneInString(s)
		}
		out = append(out, s[:cut])
		s = s[cut:]
	}
	if s != "" {
		out = append(out, s)
	}
	return out
}
