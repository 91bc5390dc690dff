package answer

import (
	"net/http"

	"github.com/pmgate/pmgate/domain/chat"
)

// UsageHeader says how the usage counts of a response were obtained:
// "reported" (the upstream's), "estimated" (chat.Estimate, at least one
// count) or "unreported" (none, estimates off). On a stream it is sent with
// the headers, before the counts are known: "estimated" whenever estimates
// are on (message_start's input count is always an estimate), else
// "unreported".
const UsageHeader = "x-pmgate-usage"

// Usage is the usage to show for a finished turn of req: the upstream's
// counts where it reported them, an estimate (from the request and the
// output received) for the others unless estimatesOff; nil means no counts
// at all. How they were obtained is kept in tr.Shown and, when h is not nil
// (a JSON answer), set as UsageHeader.
func (tr *Reader) Usage(req chat.Request, estimatesOff bool, h http.Header) *chat.Usage {
	u, estimated := tr.usage(req, estimatesOff)
	tr.Shown = "reported"
	switch {
	case u == nil:
		tr.Shown = "unreported"
	case estimated:
		tr.Shown = "estimated"
	}
	if h != nil {
		h.Set(UsageHeader, tr.Shown)
	}
	return u
}

func (tr *Reader) usage(req chat.Request, estimatesOff bool) (u *chat.Usage, estimated bool) {
	rep := tr.Reported
	if estimatesOff {
		if rep == nil || !rep.Reported() {
			return nil, false
		}
		return rep, false
	}
	est := chat.Estimate(req, tr.OutBytes)
	if rep == nil || !rep.Reported() {
		return est, true
	}
	out := *rep
	if out.PromptTokens == nil {
		out.PromptTokens, estimated = est.PromptTokens, true
	}
	if out.CompletionTokens == nil {
		out.CompletionTokens, estimated = est.CompletionTokens, true
	}
	if out.TotalTokens == nil || estimated {
		t := *out.PromptTokens + *out.CompletionTokens
		out.TotalTokens = &t
	}
	return &out, estimated
}

// StreamUsageHeader sets the usage header of a stream, sent before the
// counts are known.
func StreamUsageHeader(estimatesOff bool) func(http.Header) {
	if estimatesOff {
		return func(h http.Header) { h.Set(UsageHeader, "unreported") }
	}
	return func(h http.Header) { h.Set(UsageHeader, "estimated") }
}
