package app_test

import (
	"strings"
	"testing"

	"github.com/cockroachdb/errors"
	"github.com/matryer/is"

	"github.com/pmgate/pmgate/domain/chat"
	"github.com/pmgate/pmgate/domain/correlation"
	"github.com/pmgate/pmgate/domain/errs"
	"github.com/pmgate/pmgate/domain/toolschema"
	"github.com/pmgate/pmgate/ports"
	"github.com/pmgate/pmgate/ports/porttest"
)

// lowered returns a tool whose lowered schema is what the ingress would
// send upstream for params.
func loweredTool(t *testing.T, name, params string) chat.Tool {
	t.Helper()
	up, err := toolschema.Lower([]byte(params), "tools[0].function.parameters", toolschema.Options{})
	if err != nil {
		t.Fatal(err)
	}
	return chat.Tool{Name: name, Parameters: []byte(params), UpstreamParameters: up}
}

func toolTurn(t *testing.T, tool chat.Tool) (*rig, []error) {
	t.Helper()
	r := newRig(t, func(ports.UpstreamRequest) porttest.Script {
		return porttest.Script{Events: porttest.ToolCalls("conv-1", "grp-a", tool.Name)} // arguments {"q":"v0"}
	})
	req := request(chat.Message{Role: chat.RoleUser, Content: str("go")})
	req.Tools = []chat.Tool{tool}
	turn, err := r.gw.Chat(t.Context(), principal, req, nil)
	if err != nil {
		return r, []error{err}
	}
	ds, err := drain(t, turn)
	for _, d := range ds {
		if d.ToolCall != nil {
			return r, []error{err, errors.New("a tool call was shown")}
		}
	}
	return r, []error{err}
}

func TestArgumentsAreValidatedAgainstTheLoweredSchema(t *testing.T) {
	is := is.New(t)
	// The pattern became text upstream, so "v0" (which does not match it) is a
	// valid argument for the schema the upstream saw.
	r := newRig(t, func(ports.UpstreamRequest) porttest.Script {
		return porttest.Script{Events: porttest.ToolCalls("conv-1", "grp-a", "lookup")}
	})
	req := request(chat.Message{Role: chat.RoleUser, Content: str("go")})
	req.Tools = []chat.Tool{loweredTool(t, "lookup", `{"type":"object","properties":{"q":{"type":"string","pattern":"^[0-9]+$"}},"required":["q"]}`)}
	turn, err := r.gw.Chat(t.Context(), principal, req, nil)
	is.NoErr(err)
	ds, err := drain(t, turn)
	is.NoErr(err) // accepted
	calls := 0
	for _, d := range ds {
		if d.ToolCall != nil && d.ToolCall.ID != "" {
			calls++
		}
	}
	is.Equal(calls, 1) // the call is shown
}

func TestArgumentsBreakingTheLoweredSchemaAreAnUpstreamFault(t *testing.T) {
	is := is.New(t)
	r, errsSeen := toolTurn(t, loweredTool(t, "lookup", `{"type":"object","properties":{"q":{"type":"integer","format":"int32"}},"required":["q"],"additionalProperties":false}`))
	err := errsSeen[0]
	is.True(len(errsSeen) == 1)                             // no tool call was shown
	is.Equal(errs.CodeOf(err), errs.UpstreamMalformedEvent) // 502 upstream_malformed_event
	var ae *toolschema.ArgumentsError
	is.True(errors.As(err, &ae))
	is.Equal(ae.PublicDetail(), "tool_calls[0].function.arguments.q: does not match the tool's schema (type).") // names the call and path
	is.True(!strings.Contains(ae.PublicDetail(), "v0"))                                                         // never the value
	c, _ := r.store.Counts(t.Context())
	is.Equal(c.ByState[correlation.Pending], 0) // nothing was admitted
	is.Equal(c.ReservedCalls, 0)                // and no capacity is held
}

func TestAToolThatWasNeverLoweredIsNotAdmitted(t *testing.T) {
	is := is.New(t)
	_, errsSeen := toolTurn(t, chat.Tool{Name: "lookup", Parameters: []byte(`{"type":"object"}`)})
	is.Equal(errs.CodeOf(errsSeen[0]), errs.InternalError) // fail closed: no schema to check against
}
