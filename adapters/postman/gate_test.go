package postman_test

import (
	"errors"
	"io"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/matryer/is"

	"github.com/pmgate/pmgate/adapters/postman"
	"github.com/pmgate/pmgate/domain/completion"
	"github.com/pmgate/pmgate/domain/errs"
)

const gateConv = "data: {\"eventType\":\"conversation\",\"data\":{\"id\":\"conv-1\"}}\n\n"

// The gate followed by a clean end is its own outcome, whatever the web rule,
// and the error carries what the service said: its message, reasons, counters
// and thresholds, each bounded.
func TestTheLoopApprovalGateIsItsOwnOutcomeAndSaysWhy(t *testing.T) {
	long := strings.Repeat("é", 300) // 600 bytes
	gate := frame("loopApprovalChunk", `{"message":"`+long+`","reasons":["consecutive_tool_rounds"],`+
		`"counters":{ "toolRounds" : 5 },"thresholds":{"toolRounds":5}}`)
	for _, rule := range []completion.Rule{completion.RuleUsageAfterOutput, completion.RuleExplicitOnly} {
		t.Run(string(rule), func(t *testing.T) {
			is := is.New(t)
			s := webReader(gateConv+usageFrame+gate, func(c *postman.ReaderConfig) { c.Rule = rule })
			d := drain(t, s)
			is.Equal(errs.CodeOf(d.err), errs.UpstreamLoopApproval)      // the gate's own code
			is.Equal(s.Outcome().State, completion.LoopApprovalGated)    // its own outcome
			is.True(!errs.Has(d.err, errs.UpstreamUnsupportedEvent))     // not an unsupported event
			is.True(!errs.Has(d.err, errs.ContinuationOutcomeUncertain)) // nor an unknown outcome
			var g *postman.GateError
			is.True(errors.As(d.err, &g))                                             // it carries the gate
			is.True(len(g.Message) <= 256+len("…"))                                   // each field is bounded
			is.True(utf8.ValidString(g.Message))                                      // at a rune boundary
			is.True(strings.HasSuffix(g.Message, "…"))                                // and marked as cut
			is.Equal(g.Reasons, `["consecutive_tool_rounds"]`)                        // JSON fields as compact JSON
			is.Equal(g.Counters, `{"toolRounds":5}`)                                  // the service's numbers
			is.Equal(g.Thresholds, `{"toolRounds":5}`)                                // and its limits
			is.True(strings.Contains(g.UpstreamNote(), `counters: {"toolRounds":5}`)) // in the client's sentence
		})
	}
}

// The access_token rule still needs its [DONE]: the gate then [DONE] is the
// gate; the gate then EOF is a truncated stream.
func TestTheLoopApprovalGateOnAccessTokenNeedsItsDone(t *testing.T) {
	is := is.New(t)
	gate := frame("loopApprovalChunk", `{"message":"Continue?"}`)
	legacy := func(c *postman.ReaderConfig) { c.Rule = completion.RuleLegacyDone }
	d := drain(t, webReader(gateConv+gate+"data: [DONE]\n\n", legacy))
	is.Equal(errs.CodeOf(d.err), errs.UpstreamLoopApproval) // the gate, then [DONE]
	d = drain(t, webReader(gateConv+gate, legacy))
	is.Equal(errs.CodeOf(d.err), errs.UpstreamIncompleteStream) // no [DONE]: truncated
}

// A gate mixed with output is not described anywhere: refused as before, and
// nothing of the output is handed out as an answer.
func TestALoopApprovalGateMixedWithOutputIsRefused(t *testing.T) {
	is := is.New(t)
	gate := frame("loopApprovalChunk", `{"message":"Continue?"}`)
	d := drain(t, webReader(gateConv+textFrame("hi")+usageFrame+gate))
	is.Equal(errs.CodeOf(d.err), errs.UpstreamUnsupportedEvent) // text, then the gate
	d = drain(t, webReader(gateConv+gate+textFrame("hi")+usageFrame))
	is.Equal(errs.CodeOf(d.err), errs.UpstreamUnsupportedEvent) // the gate, then text
	is.True(d.err != io.EOF)
}

// The gate's text reaches the client, so a configured credential in it is
// masked, in the error and in the log.
func TestTheLoopApprovalGateNeverShowsASecret(t *testing.T) {
	for _, strategy := range []string{"web_session", "access_token"} {
		t.Run(strategy, func(t *testing.T) {
			is := is.New(t)
			credential := cookie // the strategy's configured credential
			if strategy == "access_token" {
				credential = token
			}
			body := gateConv + usageFrame + frame("loopApprovalChunk", `{"message":"approve `+credential+` and `+downstreamKey+`?","counters":{"k":"`+downstreamKey+`"}}`)
			if strategy == "access_token" {
				body += "data: [DONE]\n\n"
			}
			var logs logBuffer
			f := newFakeTLS(t, sseHandler(body))
			c := f.client(t, strategy, postman.WithLogger(newLogger(&logs)), postman.WithRedactedSecrets(downstreamKey))
			_, d, err := open(t, c, userText("hi"))
			is.NoErr(err)
			is.Equal(errs.CodeOf(d.err), errs.UpstreamLoopApproval) // the gate
			var g *postman.GateError
			is.True(errors.As(d.err, &g))
			is.True(strings.Contains(g.Message, "approve "))                       // the message is kept
			is.True(strings.Contains(logs.String(), `"loop_approval":{"message"`)) // and logged with the outcome
			for _, text := range []string{g.UpstreamNote(), g.Message, g.Counters, logs.String()} {
				for _, secret := range []string{credential, downstreamKey} {
					is.True(!strings.Contains(text, secret)) // never a configured secret
				}
			}
		})
	}
}
