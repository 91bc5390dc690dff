package postman

import (
	"bytes"
	"encoding/json"
	"log/slog"
	"strings"
	"unicode/utf8"

	"github.com/pmgate/pmgate/domain/completion"
	"github.com/pmgate/pmgate/domain/errs"
)

// This file handles the service's loop-approval gate (a loopApprovalChunk):
// after several consecutive tool rounds generation stops and only usage and the
// gate arrive, then a clean end. The completion machine decides the outcome
// (LOOP_APPROVAL, upstream_loop_approval); this file keeps what the event said
// — its message, reasons, counters and thresholds, the only way to learn the
// service's limits — bounded, for the error and the log.

// maxGateField bounds each of the gate's fields as kept (bytes of UTF-8; a
// longer one is cut at a rune boundary and marked with "…").
const maxGateField = 256

// loopGate is what the first gate event of a stream said. The fields are
// upstream data, not secrets; the client sees them through GateError after the
// configured credentials are masked.
type loopGate struct {
	message, reasons, counters, thresholds string
}

// loopApproval handles a loopApprovalChunk: its data must be an object (or
// null); the first one's fields are kept, and the machine decides.
func (d *decoder) loopApproval(dataKind jkind) error {
	if dataKind != kObject && dataKind != kNull {
		return d.fail(errs.UpstreamUnverifiedEventShape)
	}
	if d.gate == nil {
		g := &loopGate{}
		if dataKind == kObject {
			for _, f := range [...]struct {
				key string
				dst *string
			}{{"message", &g.message}, {"reasons", &g.reasons}, {"counters", &g.counters}, {"thresholds", &g.thresholds}} {
				m, err := d.get(d.data, f.key)
				if err != nil {
					return d.fail(errs.UpstreamUnverifiedEventShape)
				}
				*f.dst = d.gateField(m)
			}
		}
		d.gate = g
	}
	if !d.step(d.fire(completion.LoopApproval, "")) {
		return errStop
	}
	return nil
}

// gateField renders one member of the gate's data: a string as its text,
// anything else as compact JSON; bounded by maxGateField. Absent or null is "".
func (d *decoder) gateField(m *member) string {
	if m == nil || m.kind == kNull {
		return ""
	}
	var v []byte
	if m.kind == kString {
		v, _ = str(m, &d.sbuf)
	} else {
		var b bytes.Buffer
		if json.Compact(&b, m.val) != nil {
			return ""
		}
		v = b.Bytes()
	}
	return bound(string(v), maxGateField)
}

// bound cuts s to at most n bytes at a rune boundary, marking a cut with "…".
func bound(s string, n int) string {
	if len(s) <= n {
		return s
	}
	cut := n
	for cut > 0 && !utf8.RuneStart(s[cut]) {
		cut--
	}
	return s[:cut] + "…"
}

// GateError is the error of a stream that ended in the loop-approval gate
// (upstream_loop_approval). It carries what the gate said, so that the
// client's error and the log show the service's own reasons and numbers.
type GateError struct {
	cause                                  error
	Message, Reasons, Counters, Thresholds string
}

func (e *GateError) Error() string { return e.cause.Error() }
func (e *GateError) Unwrap() error { return e.cause }

// UpstreamNote is the sentence a client may see after the catalog message:
// what the gate said, bounded, with the configured credentials masked. It is
// "" when the gate said nothing.
func (e *GateError) UpstreamNote() string {
	var parts []string
	for _, f := range [...]struct{ name, v string }{
		{"message", e.Message}, {"reasons", e.Reasons}, {"counters", e.Counters}, {"thresholds", e.Thresholds},
	} {
		if f.v != "" {
			parts = append(parts, f.name+": "+f.v)
		}
	}
	if len(parts) == 0 {
		return ""
	}
	return "The upstream said (" + strings.Join(parts, "; ") + ")."
}

// LogAttrs are the gate's fields for the stream's log line (the logger masks
// secrets in its own records).
func (e *GateError) LogAttrs() slog.Attr {
	return slog.Group("loop_approval", slog.String("message", e.Message), slog.String("reasons", e.Reasons),
		slog.String("counters", e.Counters), slog.String("thresholds", e.Thresholds))
}

// gateError builds the outcome's error from the kept gate, masked with the
// decoder's mask.
func (d *decoder) gateError(cause error) error {
	g := d.gate
	if g == nil {
		g = &loopGate{}
	}
	mask := d.cfg.mask
	if mask == nil {
		mask = func(s string) string { return s }
	}
	return &GateError{cause: cause, Message: mask(g.message), Reasons: mask(g.reasons), Counters: mask(g.counters),
		Thresholds: mask(g.thresholds)}
}
