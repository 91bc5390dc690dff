package rules

import (
	"strconv"
	"strings"

	"github.com/pmgate/pmgate/adapters/httpapi/wire/wirejson"
	"github.com/pmgate/pmgate/domain/chat"
	"github.com/pmgate/pmgate/domain/toolschema"
)

// Pairing is the one rule of tool-call Pairing of the APIs whose
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
type Pairing struct {
	words   *PairWords
	turn    TurnKind        // what the turn being read is
	seen    map[string]bool // every call id so far
	pending []PendingCall   // the calls of the last assistant turn
	at      int             // the index of that turn; -1 with none
	out     []chat.Message  // the conversation so far

	// The turn being read.
	path      string
	toolCalls []chat.ToolCall // an assistant turn's
	calls     []PendingCall
	answers   int // a user turn's: they end out
	text      strings.Builder
	hasText   bool
}

// TurnKind is what a turn is to the pairing rule.
type TurnKind uint8

const (
	TurnOther     TurnKind = iota // outside the pairing (Messages' system message)
	TurnAssistant                 // assistant (model) turn
	TurnUser
)

// PairTurns reads a conversation list (words.list names the member) under
// the pairing rule: turn reads one turn (at path p) into pr, starting it
// with pr.assistant or pr.user, or returns a message outside the pairing
// (nil: nothing).
func PairTurns[T any](words *PairWords, a wirejson.Array[wirejson.Object[T]], turn func(pr *Pairing, p string, v *T) (*chat.Message, error)) ([]chat.Message, error) {
	if !a.IsArray() {
		return nil, Invalid(words.List, "is required and must be an array.")
	}
	if len(a.Items) == 0 {
		return nil, Invalid(words.List, "must not be empty.")
	}
	// A turn is one message (or one per answer: then out grows).
	pr := Pairing{words: words, seen: map[string]bool{}, at: -1, out: make([]chat.Message, 0, len(a.Items))}
	for i := range a.Items {
		p := words.List + "." + strconv.Itoa(i)
		if !a.Items[i].IsObject() {
			return nil, Invalid(p, "must be an object.")
		}
		pr.turn = TurnOther
		other, err := turn(&pr, p, &a.Items[i].V)
		if err != nil {
			return nil, err
		}
		switch pr.turn {
		case TurnAssistant:
			pr.EndAssistant(i)
		case TurnUser:
			if err := pr.EndUser(); err != nil {
				return nil, err
			}
		default:
			if other != nil {
				pr.out = append(pr.out, *other)
			}
		}
	}
	if err := pr.End(len(a.Items)); err != nil {
		return nil, err
	}
	return pr.out, nil
}

// Converse sets req's conversation (req has none yet), in this order of
// refusals: the system text (readSystem of system; none when empty), then
// the turns (readTurns of turns). It returns the request's input-token
// estimate.
func Converse[S, M any](req *chat.Request, system S, readSystem func(S) (string, error), turns M, readTurns func(M) ([]chat.Message, error)) (int64, error) {
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

// PendingCall is a tool call of the last assistant turn, waiting for its
// answer.
type PendingCall struct {
	ID, Name string
	Answered bool
	Response []byte // the answer as sent (Gemini: to recognise a replay)
}

// PairWords are an API's refusals of the pairing rule.
type PairWords struct {
	List string // the conversation's member: "messages", "contents"
	// Unanswered refuses the calls ids of the assistant turn at index at,
	// Unanswered in the turn after it.
	Unanswered func(at int, ids []string) error
	// BadID refuses a call id (at is its path) that is not ^[a-zA-Z0-9_-]+$;
	// repeatedID one an earlier call has.
	BadID      func(at string) error
	RepeatedID func(at, id string) error
	// Late refuses an answer (at is its path) after text in its turn.
	Late func(at string) error
	// Empty refuses a user turn (at is its path) of no answers and no text.
	Empty func(at string) error
	// NoUser refuses a conversation of no messages; final one that ends in
	// an assistant turn (last is the index of the last turn).
	NoUser func() error
	Final  func(last int) error
}

// Assistant starts an Assistant turn at path p: refused while calls of the
// turn before are unanswered.
func (pr *Pairing) Assistant(p string) error {
	if len(pr.pending) > 0 {
		return pr.UnansweredCalls()
	}
	pr.Start(TurnAssistant, p)
	return nil
}

func (pr *Pairing) Start(k TurnKind, p string) {
	pr.turn, pr.path, pr.toolCalls, pr.calls, pr.answers = k, p, nil, nil, 0
	pr.text.Reset()
	pr.hasText = false
}

// CallID checks the id of a call of the assistant turn (at is its path):
// the pattern, then unique in the conversation.
func (pr *Pairing) CallID(at, id string) error {
	if !ValidToolID(id) {
		return pr.words.BadID(at)
	}
	if pr.seen[id] {
		return pr.words.RepeatedID(at, id)
	}
	pr.seen[id] = true
	return nil
}

// Call adds a Call (its id checked by callID) to the assistant turn.
func (pr *Pairing) Call(id, name, args string) {
	pr.toolCalls = append(pr.toolCalls, chat.ToolCall{ID: id, Name: name, Arguments: args})
	pr.calls = append(pr.calls, PendingCall{ID: id, Name: name})
}

// EndAssistant (PairTurns) ends assistant turn i: its message joins the
// conversation unless it carries nothing the upstream can use (thinking
// only), which leaves the pairing as it was.
func (pr *Pairing) EndAssistant(i int) {
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

// User starts a User turn at path p.
func (pr *Pairing) User(p string) { pr.Start(TurnUser, p) }

// AnswerAt refuses an answer at path at that comes after text.
func (pr *Pairing) AnswerAt(at string) error {
	if pr.hasText {
		return pr.words.Late(at)
	}
	return nil
}

// Find is the pending call of id (nil if none).
func (pr *Pairing) Find(id string) *PendingCall {
	for i := range pr.pending {
		if pr.pending[i].ID == id {
			return &pr.pending[i]
		}
	}
	return nil
}

// FindName is the one unanswered pending call of name (nil if none;
// ambiguous when more than one has it).
func (pr *Pairing) FindName(name string) (c *PendingCall, ambiguous bool) {
	for i := range pr.pending {
		if pr.pending[i].Name == name && !pr.pending[i].Answered {
			if c != nil {
				return nil, true
			}
			c = &pr.pending[i]
		}
	}
	return c, false
}

// Answer records c's Answer (content, as the upstream reads it).
func (pr *Pairing) Answer(c *PendingCall, content string) {
	c.Answered = true
	pr.out = append(pr.out, chat.Message{Role: chat.RoleTool, ToolCallID: c.ID, Content: &content})
	pr.answers++
}

// AddText adds text to the turn: an assistant turn's pieces are joined as
// they are, a user turn's with blank lines (an empty piece adds none, and
// still counts as text).
func (pr *Pairing) AddText(t string) {
	if pr.turn == TurnAssistant {
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

// EndUser (PairTurns) ends the user turn: every pending call must be
// answered; the answers (text after them added to the last) or else one
// user message of its text join the conversation.
func (pr *Pairing) EndUser() error {
	for _, c := range pr.pending {
		if !c.Answered {
			return pr.UnansweredCalls()
		}
	}
	pr.pending, pr.at = nil, -1
	if pr.answers == 0 {
		if !pr.hasText {
			return pr.words.Empty(pr.path)
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

// End (PairTurns) checks the whole conversation (of n turns as sent): it
// holds a message, its last assistant turn's calls are answered, and it
// does not End in an assistant turn.
func (pr *Pairing) End(n int) error {
	out := pr.out
	if len(out) == 0 {
		return pr.words.NoUser()
	}
	if out[len(out)-1].Role == chat.RoleAssistant {
		if len(pr.pending) > 0 {
			return pr.UnansweredCalls()
		}
		return pr.words.Final(n - 1)
	}
	return nil
}

func (pr *Pairing) UnansweredCalls() error {
	var ids []string
	for _, c := range pr.pending {
		if !c.Answered {
			ids = append(ids, c.ID)
		}
	}
	return pr.words.Unanswered(pr.at, ids)
}

// ValidToolID matches ^[a-zA-Z0-9_-]+$ (the API's tool id pattern), at most
// 256 characters.
func ValidToolID(s string) bool { return toolschema.IdentifierUpTo(s, 256) }

// Turn is what the turn being read is.
func (pr *Pairing) Turn() TurnKind { return pr.turn }
