package postman

import (
	"bytes"
	"time"

	"github.com/pmgate/pmgate/domain/chat"
	"github.com/pmgate/pmgate/domain/completion"
	"github.com/pmgate/pmgate/domain/errs"
	"github.com/pmgate/pmgate/ports"
)

// This file holds the handlers of the events that carry output or end a
// stream early: text chunks, usage (with the credit state) and failures.

// textChunk emits the text of a textChunk event (data.textContent).
func (d *decoder) textChunk(dataKind jkind) error {
	if dataKind != kObject {
		return d.fail(errs.UpstreamUnverifiedEventShape)
	}
	m, err := d.get(d.data, "textContent")
	if err != nil || m == nil {
		return d.fail(errs.UpstreamUnverifiedEventShape)
	}
	text, ok := str(m, &d.tbuf)
	if !ok {
		return d.fail(errs.UpstreamUnverifiedEventShape)
	}
	if len(text) == 0 {
		if !d.step(d.fire(completion.Metadata, "")) {
			return errStop
		}
		return nil
	}
	if d.outBytes+len(text) > d.cfg.maxOutput {
		return d.fail(errs.UpstreamOutputTooLarge)
	}
	if !d.step(d.fire(completion.Output, "")) {
		return errStop
	}
	d.outBytes += len(text)
	d.push(chat.Event{Kind: chat.EventText, Text: string(text)})
	return nil
}

// tokenField reads one explicit token count: the first present of keys, which
// must be a non-negative integer.
func (d *decoder) tokenField(keys ...string) (*int64, bool) {
	m, err := d.first(d.data, keys...)
	if err != nil {
		return nil, false
	}
	if m == nil {
		return nil, true
	}
	if m.kind != kNumber {
		return nil, false
	}
	v, ok := parseUint(m.val)
	if !ok {
		return nil, false
	}
	return &v, true
}

// usage reads a usage event: the credit state (an exhausted one fails the
// stream) and the explicit token counts.
func (d *decoder) usage(dataKind jkind) error {
	switch dataKind {
	case kNull:
		if !d.step(d.fire(completion.Usage, "")) {
			return errStop
		}
		return nil
	case kObject:
	default:
		return d.fail(errs.UpstreamUnverifiedEventShape)
	}
	d.recordUsageFields()
	st, err := d.get(d.data, "usageState")
	if err != nil {
		return d.fail(errs.UpstreamUnverifiedEventShape)
	}
	if st != nil && st.kind != kNull {
		s, ok := str(st, &d.sbuf)
		if !ok {
			return d.fail(errs.UpstreamUnverifiedEventShape)
		}
		state := usageStateOf(s)
		if state == "" {
			return d.fail(errs.UpstreamUnverifiedEventShape) // unknown credit states fail closed
		}
		r := d.readCredits(state)
		d.report(r) // the exhausted and blocked states are the owner's news too
		switch state {
		case "EXCEEDED", "UNAVAILABLE":
			if !r.CycleEnd.IsZero() {
				// Only adds to the exhausted quota's answer: a missing or odd
				// end never fails the stream.
				d.cycleEnd = r.CycleEnd.Format(time.RFC3339)
			}
			return d.fail(errs.UpstreamQuotaExhausted)
		case "BLOCKED":
			return d.fail(errs.UpstreamAccountBlocked) // the account, not its quota (docs/UPSTREAM.md)
		}
	} else {
		d.report(d.readCredits(""))
	}
	var u chat.Usage
	var ok1, ok2, ok3 bool
	u.PromptTokens, ok1 = d.tokenField("promptTokens", "prompt_tokens", "inputTokens", "input_tokens")
	u.CompletionTokens, ok2 = d.tokenField("completionTokens", "completion_tokens", "outputTokens", "output_tokens")
	u.TotalTokens, ok3 = d.tokenField("totalTokens", "total_tokens")
	if !ok1 || !ok2 || !ok3 {
		return d.fail(errs.UpstreamUnverifiedEventShape)
	}
	if !d.step(d.fire(completion.Usage, "")) {
		return errStop
	}
	if u.Reported() {
		d.push(chat.Event{Kind: chat.EventUsage, Usage: &u})
	}
	return nil
}

// usageStateOf returns the known usageState s names ("" for any other).
func usageStateOf(s []byte) string {
	for _, k := range [...]string{"AVAILABLE", "EXCEEDED", "UNAVAILABLE", "BLOCKED"} {
		if string(s) == k {
			return k
		}
	}
	return ""
}

// report hands a usage event's plan report to the stream's holder (none for
// a reader stream) and keeps it for the stream's access line.
func (d *decoder) report(r ports.CreditReport) {
	if !r.Known {
		return
	}
	d.credit = r
	if d.cfg.onCredits != nil {
		d.cfg.onCredits(r)
	}
}

// Quota phrases and request-rejection texts (docs/UPSTREAM.md), lowercase.
var (
	quotaPhrases = []string{
		"usage_limit_exceeded", "quota_exceeded", "monthly ai credit limit", "ai credit limit",
		"regain agent mode access", "enable pay-as-you-go", "enable pay as you go",
	}
	rejectionPhrases = []string{
		"input_validation_error", "agent mode accepts upto", "agent mode accepts up to",
		"that was unexpected :(", "remove any configured mcp servers", "invalid tool schema",
		"mcp tool", "invalid input query",
	}
)

// classifyText maps the lowercase text of an upstream error to a code: a quota
// phrase gives upstream_quota_exhausted, a known rejection text
// upstream_request_rejected, anything else "".
func classifyText(lower []byte) errs.Code {
	for _, p := range quotaPhrases {
		if bytes.Contains(lower, []byte(p)) {
			return errs.UpstreamQuotaExhausted
		}
	}
	for _, p := range rejectionPhrases {
		if bytes.Contains(lower, []byte(p)) {
			return errs.UpstreamRequestRejected
		}
	}
	return ""
}

// failureCode classifies a failure, error or {"result":"failure"} event. The
// texts are read only to choose the code; they never leave this function.
func (d *decoder) failureCode(env *envelope, dataKind jkind) errs.Code {
	var text []byte
	add := func(ms []member, keys ...string) {
		for _, k := range keys {
			m, err := d.get(ms, k)
			if err != nil || m == nil {
				continue
			}
			switch m.kind {
			case kString:
				s, _ := str(m, &d.sbuf)
				text = append(append(text, s...), '\n')
			case kObject:
				if k != "error" {
					continue
				}
				var inner []member
				inner, err = parseObjectSpan(m.val, inner)
				if err != nil {
					continue
				}
				for _, ik := range [...]string{"message", "code", "type", "errorType"} {
					im, err := d.get(inner, ik)
					if err == nil && im != nil && im.kind == kString {
						s, _ := str(im, &d.sbuf)
						text = append(append(text, s...), '\n')
					}
				}
			}
		}
	}
	add(d.top, "message", "error", "code", "errorType")
	switch dataKind {
	case kObject:
		add(d.data, "userMessage", "message", "detail", "reason", "errorType", "code", "error")
	case kString:
		s, _ := str(env.data, &d.sbuf)
		text = append(text, s...)
	}
	d.errType = d.failureType(dataKind)
	lower := bytes.ToLower(text)
	if code := classifyText(lower); code != "" {
		return code
	}
	return errs.UpstreamFailure
}

// failureType is the error type of a failure event: data.errorType or
// data.code, else the top-level errorType or code, when it looks like an
// error type.
func (d *decoder) failureType(dataKind jkind) string {
	pick := func(ms []member) string {
		for _, k := range [...]string{"errorType", "code"} {
			if m, err := d.get(ms, k); err == nil && m != nil && m.kind == kString {
				if s, _ := str(m, &d.sbuf); isErrorType(string(s)) {
					return string(s)
				}
			}
		}
		return ""
	}
	if dataKind == kObject {
		if t := pick(d.data); t != "" {
			return t
		}
	}
	return pick(d.top)
}
