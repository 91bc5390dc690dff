package correlation_test

import (
	"testing"

	"github.com/matryer/is"

	"github.com/pmgate/pmgate/domain/canon"
	"github.com/pmgate/pmgate/domain/chat"
	"github.com/pmgate/pmgate/domain/correlation"
	"github.com/pmgate/pmgate/domain/errs"
)

func TestSplitContinuationTakesTheFinalToolBlock(t *testing.T) {
	is := is.New(t)
	msgs := []chat.Message{
		{Role: chat.RoleUser, Content: str("q")},
		{Role: chat.RoleTool, ToolCallID: "old", Content: str("x")},
		{Role: chat.RoleAssistant, Content: str("a")},
		{Role: chat.RoleTool, ToolCallID: "a", Content: str("1")},
		{Role: chat.RoleTool, ToolCallID: "b"},
	}
	c, ok := correlation.SplitContinuation(msgs)
	is.True(ok)                                                      // ends in tool results: a continuation
	is.Equal(len(c.Prefix), 3)                                       // earlier tool messages stay history
	is.Equal(c.Results, []correlation.Result{{"a", "1"}, {"b", ""}}) // null content is the empty text
	_, ok = correlation.SplitContinuation(msgs[:3])
	is.True(!ok) // a request ending in another role is a fresh turn
}

// mutate applies one change to a valid submission and names the code it must get.
func TestEachValidationStepRejectsWithItsCode(t *testing.T) {
	cases := []struct {
		name   string
		mutate func(f fixture, s *correlation.Submission)
		code   errs.Code
	}{
		{"an unresolved id is unknown", func(_ fixture, s *correlation.Submission) { s.Unresolved = 1 }, errs.UnknownToolCall},
		{"another principal is unknown", func(_ fixture, s *correlation.Submission) { s.PrincipalID = "p2" }, errs.UnknownToolCall},
		{"ids of two groups are a group mismatch", func(_ fixture, s *correlation.Submission) { s.OtherGroups = 1 }, errs.ToolResultGroupMismatch},
		{"a duplicate result is a group mismatch", func(_ fixture, s *correlation.Submission) {
			s.Continuation.Results = append(s.Continuation.Results, s.Continuation.Results[0])
		}, errs.ToolResultGroupMismatch},
		{"an extra id is a group mismatch", func(_ fixture, s *correlation.Submission) {
			s.Continuation.Results = append(s.Continuation.Results, correlation.Result{ID: "call_pmn_zzz", Content: "x"})
		}, errs.ToolResultGroupMismatch},
		{"a missing result is incomplete", func(_ fixture, s *correlation.Submission) {
			s.Continuation.Results = s.Continuation.Results[:1]
		}, errs.ToolResultIncomplete},
		{"a result before the final block is misplaced", func(f fixture, s *correlation.Submission) {
			s.Continuation.Prefix = append(append([]chat.Message(nil), s.Continuation.Prefix...),
				chat.Message{Role: chat.RoleTool, ToolCallID: f.group.Calls[0].PublicID, Content: str("early")},
				chat.Message{Role: chat.RoleUser, Content: str("and also")})
		}, errs.ToolResultGroupMismatch},
		{"a changed earlier message is a history mismatch", func(_ fixture, s *correlation.Submission) {
			p := append([]chat.Message(nil), s.Continuation.Prefix...)
			p[1].Content = str("weather in Bergen?")
			s.Continuation.Prefix = p
		}, errs.ContinuationHistoryMismatch},
		{"changed tool call arguments are a history mismatch", func(_ fixture, s *correlation.Submission) {
			setArguments(s, 0, `{"city": "Bergen"}`)
		}, errs.ContinuationHistoryMismatch},
		{"an echo-added default with another value is a history mismatch", func(_ fixture, s *correlation.Submission) {
			setArguments(s, 0, `{"city":"Oslo","unit":"f"}`)
		}, errs.ContinuationHistoryMismatch},
		{"an echo-added property without a default is a history mismatch", func(_ fixture, s *correlation.Submission) {
			setArguments(s, 0, `{"city":"Oslo","days":1}`)
		}, errs.ContinuationHistoryMismatch},
		{"echoed arguments that are not an object are a history mismatch", func(_ fixture, s *correlation.Submission) {
			setArguments(s, 0, `"{\"city\":\"Oslo\"}"`)
		}, errs.ContinuationHistoryMismatch},
		{"a changed call id is a history mismatch", func(_ fixture, s *correlation.Submission) {
			p := append([]chat.Message(nil), s.Continuation.Prefix...)
			calls := append([]chat.ToolCall(nil), p[2].ToolCalls...)
			calls[0].ID = "call_pmn_other"
			p[2].ToolCalls = calls
			s.Continuation.Prefix = p
		}, errs.ContinuationHistoryMismatch},
		{"an inserted message is a history mismatch", func(_ fixture, s *correlation.Submission) {
			s.Continuation.Prefix = append(append([]chat.Message(nil), s.Continuation.Prefix...), chat.Message{Role: chat.RoleUser, Content: str("hi")})
		}, errs.ContinuationHistoryMismatch},
		{"a removed message is a history mismatch", func(_ fixture, s *correlation.Submission) {
			s.Continuation.Prefix = s.Continuation.Prefix[1:]
		}, errs.ContinuationHistoryMismatch},
		{"another model is a model mismatch", func(_ fixture, s *correlation.Submission) { s.Model = "gpt-5.4" }, errs.ContinuationModelMismatch},
		{"another workspace is a workspace mismatch", func(_ fixture, s *correlation.Submission) { s.WorkspaceID = "ws-2" }, errs.ContinuationWorkspaceMismatch},
		{"other tools are a tools mismatch", func(_ fixture, s *correlation.Submission) { s.ToolsHash = "sha256:other" }, errs.ContinuationToolsMismatch},
		{"tools of another API are a tools mismatch", func(f fixture, s *correlation.Submission) {
			s.ToolsHash, _ = canon.ToolsBinding("responses", []chat.Tool{{Name: "get_weather", Parameters: []byte(fixtureSchema)}})
		}, errs.ContinuationToolsMismatch},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			is := is.New(t)
			f := newFixture(t, "g1", "p1", "call_pmn_a", "call_pmn_b")
			s := f.submission("r1", "r2")
			c.mutate(f, &s)
			is.Equal(correlation.ValidateCode(f.group, s), c.code) // the step's code
			g := f.group
			d, err := g.Submit(t0, policy, s, "a1")
			is.NoErr(err)
			record(t.Name(), d)
			is.Equal(d.Code, c.code)               // the machine answers with it
			is.Equal(g.State, correlation.Pending) // and changes nothing
			is.Equal(g.DispatchAttemptID, "")      // no claim was made
		})
	}
}

func TestEchoFormsOfTheAssistantTurnAreAccepted(t *testing.T) {
	is := is.New(t)
	f := newFixture(t, "g1", "p1", "call_pmn_a")
	for _, content := range []*string{nil, str("")} {
		s := f.submission("r1")
		p := append([]chat.Message(nil), s.Continuation.Prefix...)
		p[2].Content = content
		p[2].Name = "ignored-for-assistant"
		s.Continuation.Prefix = p
		is.Equal(correlation.ValidateCode(f.group, s), errs.Code("")) // null, absent or "" content and a name are the same turn
	}
}

// setArguments replaces the echoed argument string of call i of the
// submission's assistant turn (the last prefix message).
func setArguments(s *correlation.Submission, i int, args string) {
	p := append([]chat.Message(nil), s.Continuation.Prefix...)
	last := len(p) - 1
	calls := append([]chat.ToolCall(nil), p[last].ToolCalls...)
	calls[i].Arguments = args
	p[last].ToolCalls = calls
	s.Continuation.Prefix = p
}

func TestReserializedArgumentEchoesAreTheSameTurn(t *testing.T) {
	f := newFixture(t, "g1", "p1", "call_pmn_a", "call_pmn_b")
	for _, args := range []string{
		`{ "city" : "Oslo" }`,                                  // whitespace
		`{"city":"Osl\u006f"}`,                                 // an escape for a raw character
		`{"unit":"c","city":"Oslo"}`,                           // the schema default added, another key order
		"{\n  \"city\": \"Oslo\",\n  \"unit\": \"\\u0063\"\n}", // both, pretty-printed
	} {
		t.Run(args, func(t *testing.T) {
			is := is.New(t)
			s := f.submission("r1", "r2")
			setArguments(&s, 1, args)
			is.Equal(correlation.ValidateCode(f.group, s), errs.Code("")) // the same JSON value after dropping echo-added defaults
			echo, err := canon.PrepareEcho(s.Continuation.Prefix, f.defaults)
			is.NoErr(err)
			s.Echo, s.Defaults = echo, nil
			is.Equal(correlation.ValidateCode(f.group, s), errs.Code("")) // prepared outside the lock: the same outcome
		})
	}
}

func TestARecordOfTheExactFormIsCheckedUnderItsOwnRules(t *testing.T) {
	// A record stored by a build before value-form transcripts: its hash is
	// the exact form. A byte-identical echo is still accepted; a re-serialized
	// one is refused, as it was when the record was written.
	is := is.New(t)
	f := newFixture(t, "g1", "p1", "call_pmn_a")
	exact, err := canon.TranscriptHash(f.prefix)
	is.NoErr(err)
	legacy := f.group
	legacy.TranscriptHash = exact
	s := f.submission("r1")
	echo, err := canon.PrepareEcho(s.Continuation.Prefix, f.defaults)
	is.NoErr(err)
	s.Echo = echo
	is.Equal(correlation.ValidateCode(legacy, s), errs.Code("")) // byte-identical echo of an old record
	setArguments(&s, 0, `{"city": "Oslo"}`)
	s.Echo = nil
	is.Equal(correlation.ValidateCode(legacy, s), errs.ContinuationHistoryMismatch) // exact rules for an exact record
	is.Equal(correlation.ValidateCode(f.group, s), errs.Code(""))                   // value rules for a value record

	unknown := f.group
	unknown.TranscriptHash = "sha512:" + exact[len("sha256:"):]
	is.Equal(correlation.ValidateCode(unknown, f.submission("r1")), errs.ContinuationHistoryMismatch) // an unknown form fails closed
}

func TestARecordOfTheOlderToolsFormIsCheckedUnderItsOwnRules(t *testing.T) {
	// A record stored by a build before the tools binding: its tools hash also
	// bound tool_choice, and it is compared with the legacy hash of the
	// submission; a record of the current form is not.
	is := is.New(t)
	f := newFixture(t, "g1", "p1", "call_pmn_a")
	tools := []chat.Tool{{Name: "get_weather", Parameters: []byte(fixtureSchema)}}
	auto, err := canon.ToolsHash(tools, chat.ToolChoice{Mode: chat.ToolChoiceAuto})
	is.NoErr(err)
	required, err := canon.ToolsHash(tools, chat.ToolChoice{Mode: chat.ToolChoiceRequired})
	is.NoErr(err)
	legacy := f.group
	legacy.ToolsHash = auto
	s := f.submission("r1")
	s.LegacyToolsHash = auto
	is.Equal(correlation.ValidateCode(legacy, s), errs.Code("")) // the same tools and choice as the old record
	s.LegacyToolsHash = required
	is.Equal(correlation.ValidateCode(legacy, s), errs.ContinuationToolsMismatch) // the old form bound the choice
	is.Equal(correlation.ValidateCode(f.group, s), errs.Code(""))                 // the current form does not
	s.LegacyToolsHash = ""
	is.Equal(correlation.ValidateCode(legacy, s), errs.ContinuationToolsMismatch) // no legacy form (another API): never a match
}
