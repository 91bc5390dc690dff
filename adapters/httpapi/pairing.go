package httpapi

import (
	"strconv"
	"strings"

	"github.com/pmgate/pmgate/adapters/httpapi/wire/wirejson"
	"github.com/pmgate/pmgate/domain/chat"
)

// pairing is the one rule of tool-call pairing of the APIs whose
// conversations answer calls turn by turn (Messages and Gemini): the tool
// calls of an assistant turn are pending until the next user turn, whose
// answers come first, answer every call once, in any order, and become tool
// messages; text after them is added to the last answer, so the upstream
// sees it and the turn still ends in results, and is kept as that answer's
// Trailing, so that when the results are history (their group was
// dispatched before) it goes up alone as the next user turn; call ids are
// unique in the conversation. A turn with no answers is one user message of
// its text.
//
// Each API reads its own turns and feeds them in as it reads them, so the
// refusals come in the order of the body, and words the refusals itself
// (pairWords): the rule is here, the wording and the paths are the API's.
type pairing struct {
	words   *pairWords
	turn    turnKind        // what the turn being read is
	seen    map[string]bool // every call id so far
	pending []pendingCall   // the calls of the last assistant turn
	at      int             // the index of that turn; -1 with none
	out     []chat.Message  // the conversation so far

	// The turn being read.
	path      string
	toolCalls []chat.ToolCall // an assistant turn's
	calls     []pendingCall
	answers   int // a user turn's: they end out
	text      strings.Builder
	hasText   bool
}

type turnKind uint8

const (
	turnOther     turnKind = iota // outside the pairing (Messages' system message)
	turnAssistant                 // assistant (model) turn
	turnUser
)

// pairTurns reads a conversation list (words.list names the member) under
// the pairing rule: turn reads one turn (at path p) into pr, starting it
// with pr.assistant or pr.user, or returns a message outside the pairing
// (nil: nothing).
func pairTurns[T any](words *pairWords, a wirejson.Array[wirejson.Object[T]], turn func(pr *pairing, p string, v *T) (*chat.Message, error)) ([]chat.Message, error) {
	if !a.IsArray() {
		return nil, invalid(words.list, "is required and must be an array.")
	}
	if len(a.Items) == 0 {
		return nil, invalid(words.list, "must not be empty.")
	}
	// A turn is one message (or one per answer: then out grows).
	pr := pairing{words: words, seen: map[string]bool{}, at: -1, out: make([]chat.Message, 0, len(a.Items))}
	for i := range a.Items {
		p := words.list + "." + strconv.Itoa(i)
		if !a.Items[i].IsObject() {
			return nil, invalid(p, "must be an object.")
		}
		pr.turn = turnOther
		other, err := turn(&pr, p, &a.Items[i].V)
		if err != nil {
			return nil, err
		}
		switch pr.turn {
		case turnAssistant:
			pr.endAssistant(i)
		case turnUser:
			if err := pr.endUser(); err != nil {
				return nil, err
			}
		default:
			if other != nil {
				pr.out = append(pr.out, *other)
			}
		}
	}
	if err := pr.end(len(a.Items)); err != nil {
		return nil, err
	}
	return pr.out, nil
}

// converse sets req's conversation (req has none yet), in this order of
// refusals: the system text (readSystem of system; none when empty), then
// the turns (readTurns of turns). It returns the request's input-token
// estimate.
func converse[S, M any](req *chat.Request, system S, readSystem func(S) (string, error), turns M, readTurns func(M) ([]chat.Message, error)) (int64, error) {
	sys, err := readSystem(system)
	if err != nil {
		return 0, err
	}
	msgs, err := readTurns(turns)
	if err != nil {
		return 0, err
	}
	if sys == "" {
		req.Messages = msgs
	} else {
		text := sys
		req.Messages = append(append(make([]chat.Message, 0, len(msgs)+1), chat.Message{Role: chat.RoleSystem, Content: &text}), msgs...)
	}
	return chat.EstimateInputTokens(*req), nil
}

// pendingCall is a tool call of the last assistant turn, waiting for its
// answer.
type pendingCall struct {
	id, name string
	answered bool
	response []byte // the answer as sent (Gemini: to recognise a replay)
}

// pairWords are an API's refusals of the pairing rule.
type pairWords struct {
	list string // the conversation's member: "messages", "contents"
	// unanswered refuses the calls ids of the assistant turn at index at,
	// unanswered in the turn after it.
	unanswered func(at int, ids []string) error
	// badID refuses a call id (at is its path) that is not ^[a-zA-Z0-9_-]+$;
	// repeatedID one an earlier call has.
	badID      func(at string) error
	repeatedID func(at, id string) error
	// late refuses an answer (at is its path) after text in its turn.
	late func(at string) error
	// empty refuses a user turn (at is its path) of no answers and no text.
	empty func(at string) error
	// noUser refuses a conversation of no messages; final one that ends in
	// an assistant turn (last is the index of the last turn).
	noUser func() error
	final  func(last int) error
}

// assistant starts an assistant turn at path p: refused while calls of the
// turn before are unanswered.
func (pr *pairing) assistant(p string) error {
	if len(pr.pending) > 0 {
		return pr.unanswered()
	}
	pr.start(turnAssistant, p)
	return nil
}

func (pr *pairing) start(k turnKind, p string) {
	pr.turn, pr.path, pr.toolCalls, pr.calls, pr.answers = k, p, nil, nil, 0
	pr.text.Reset()
	pr.hasText = false
}

// callID checks the id of a call of the assistant turn (at is its path):
// the pattern, then unique in the conversation.
func (pr *pairing) callID(at, id string) error {
	if !validToolID(id) {
		return pr.words.badID(at)
	}
	if pr.seen[id] {
		return pr.words.repeatedID(at, id)
	}
	pr.seen[id] = true
	return nil
}

// call adds a call (its id checked by callID) to the assistant turn.
func (pr *pairing) call(id, name, args string) {
	pr.toolCalls = append(pr.toolCalls, chat.ToolCall{ID: id, Name: name, Arguments: args})
	pr.calls = append(pr.calls, pendingCall{id: id, name: name})
}

// endAssistant (pairTurns) ends assistant turn i: its message joins the
// conversation unless it carries nothing the upstream can use (thinking
// only), which leaves the pairing as it was.
func (pr *pairing) endAssistant(i int) {
	m := chat.Message{Role: chat.RoleAssistant, ToolCalls: pr.toolCalls}
	if pr.hasText {
		t := pr.text.String()
		m.Content = &t
	}
	if m.Content == nil && len(m.ToolCalls) == 0 {
		return
	}
	pr.out = append(pr.out, m)
	pr.pending, pr.at = pr.calls, i
}

// user starts a user turn at path p.
func (pr *pairing) user(p string) { pr.start(turnUser, p) }

// answerAt refuses an answer at path at that comes after text.
func (pr *pairing) answerAt(at string) error {
	if pr.hasText {
		return pr.words.late(at)
	}
	return nil
}

// find is the pending call of id (nil if none).
func (pr *pairing) find(id string) *pendingCall {
	for i := range pr.pending {
		if pr.pending[i].id == id {
			return &pr.pending[i]
		}
	}
	return nil
}

// findName is the one unanswered pending call of name (nil if none;
// ambiguous when more than one has it).
func (pr *pairing) findName(name string) (c *pendingCall, ambiguous bool) {
	for i := range pr.pending {
		if pr.pending[i].name == name && !pr.pending[i].answered {
			if c != nil {
				return nil, true
			}
			c = &pr.pending[i]
		}
	}
	return c, false
}

// answer records c's answer (content, as the upstream reads it).
func (pr *pairing) answer(c *pendingCall, content string) {
	c.answered = true
	pr.out = append(pr.out, chat.Message{Role: chat.RoleTool, ToolCallID: c.id, Content: &content})
	pr.answers++
}

// addText adds text to the turn: an assistant turn's pieces are joined as
// they are, a user turn's with blank lines (an empty piece adds none, and
// still counts as text).
func (pr *pairing) addText(t string) {
	if pr.turn == turnAssistant {
		pr.text.WriteString(t)
		pr.hasText = pr.hasText || t != ""
		return
	}
	if pr.text.Len() > 0 && t != "" {
		pr.text.WriteString("\n\n")
	}
	pr.text.WriteString(t)
	pr.hasText = true
}

// endUser (pairTurns) ends the user turn: every pending call must be
// answered; the answers (text after them added to the last) or else one
// user message of its text join the conversation.
func (pr *pairing) endUser() error {
	for _, c := range pr.pending {
		if !c.answered {
			return pr.unanswered()
		}
	}
	pr.pending, pr.at = nil, -1
	if pr.answers == 0 {
		if !pr.hasText {
			return pr.words.empty(pr.path)
		}
		t := pr.text.String()
		pr.out = append(pr.out, chat.Message{Role: chat.RoleUser, Content: &t})
		return nil
	}
	if pr.hasText && pr.text.Len() > 0 {
		last := &pr.out[len(pr.out)-1]
		trailing := pr.text.String()
		joined := *last.Content + "\n\n" + trailing
		last.Content, last.Trailing = &joined, trailing
	}
	return nil
}

// end (pairTurns) checks the whole conversation (of n turns as sent): it
// holds a message, its last assistant turn's calls are answered, and it
// does not end in an assistant turn.
func (pr *pairing) end(n int) error {
	out := pr.out
	if len(out) == 0 {
		return pr.words.noUser()
	}
	if out[len(out)-1].Role == chat.RoleAssistant {
		if len(pr.pending) > 0 {
			return pr.unanswered()
		}
		return pr.words.final(n - 1)
	}
	return nil
}

func (pr *pairing) unanswered() error {
	var ids []string
	for _, c := range pr.pending {
		if !c.answered {
			ids = append(ids, c.id)
		}
	}
	return pr.words.unanswered(pr.at, ids)
}
