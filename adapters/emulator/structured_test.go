package emulator_test

import (
	"strings"
	"testing"

	"github.com/matryer/is"

	"github.com/pmgate/pmgate/adapters/emulator"
	"github.com/pmgate/pmgate/domain/structured"
)

// structuredQuery is a query that ends in the gateway's structured-output
// instruction naming schema.
func structuredQuery(text, schema string) string { return text + structured.InstructionSchema + schema }

// A structured_* scenario of a query that starts a tool loop changes the
// answer at the end of that loop, not the tool rounds: the tool results carry
// no scenario, the query's is kept (docs/STRUCTURED-OUTPUT.md, "The
// emulator").
func TestAStructuredScenarioCarriesThroughTheToolLoopItsQueryStarts(t *testing.T) {
	t.Parallel()
	const schema = `{"type":"object","properties":{"city":{"type":"string"},"mark":{"type":"string","enum":["` + "\uFFFD" + `"]}},"required":["city","mark"],"additionalProperties":false}`
	valid := `{"city":"value-city","mark":"` + "\uFFFD" + `"}`
	for scenario, want := range map[string]string{
		"":                                       valid,
		emulator.ScenarioStructuredInvalidJSON:   valid[:len(valid)-1],
		emulator.ScenarioStructuredViolation:     `{"city":12345,"mark":"` + "\uFFFD" + `"}`,
		emulator.ScenarioStructuredProse:         "Here is the JSON you asked for:\n" + valid + "\nLet me know if you need anything else.",
		emulator.ScenarioStructuredRefusal:       "I'm sorry, but I can't help with that request.",
		emulator.ScenarioStructuredCodeFence:     "```json\n" + valid + "\n```",
		emulator.ScenarioStructuredLoneSurrogate: `{"city":"value-city","mark":"\ud800"}`,
	} {
		t.Run("scenario "+scenario, func(t *testing.T) {
			t.Parallel()
			is := is.New(t)
			s := start(t)
			p := tokenPeer(t, s)
			q := "weather?"
			if scenario != "" {
				q += " #scenario=" + scenario
			}
			st := p.turn(userQuery(structuredQuery(q, schema)).withTools(false, true, weatherTool))
			conv := st.conversationID()
			calls, group := st.calls(t)
			is.Equal(len(calls), 1) // the query starts a tool round, whatever its scenario
			st = p.turn(answer("grouped", conv, group, calls, false, 1))
			is.Equal(st.text(), want) // the loop's final answer is the scenario's
		})
	}
}

// The scenario of a structured query without tools changes its answer at
// once; one that names no U+FFFD gets its lone surrogate after the first
// quote.
func TestTheLoneSurrogateScenarioWritesAnEscapeClientsDecodeDifferently(t *testing.T) {
	t.Parallel()
	is := is.New(t)
	s := start(t)
	st := tokenPeer(t, s).turn(userQuery(structuredQuery("hi #scenario="+emulator.ScenarioStructuredLoneSurrogate,
		`{"type":"object","properties":{"city":{"type":"string"}},"required":["city"]}`)))
	is.Equal(st.text(), `{"\ud800city":"value-city"}`) // an escape of half a surrogate pair, as text
	is.True(!strings.Contains(st.text(), "\uFFFD"))

	// An enum the instruction spells as the escape \ufffd: the answer is the
	// lone surrogate escape in its place.
	st = tokenPeer(t, s).turn(userQuery(structuredQuery("hi #scenario="+emulator.ScenarioStructuredLoneSurrogate,
		`{"type":"object","properties":{"m":{"enum":["\ufffd"]}},"required":["m"]}`)))
	is.Equal(st.text(), `{"m":"\ud800"}`)
}
