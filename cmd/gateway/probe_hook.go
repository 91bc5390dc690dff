package main

import "github.com/pmgate/pmgate/adapters/postman"

// streamSummaryOption feeds the adapter's per-stream summary (event types,
// terminal evidence, rule, row, outcome, which rules would have completed the
// stream) to the probe's record of the open dispatch.
func streamSummaryOption(pu *probeUpstream) []postman.Option {
	return []postman.Option{postman.OnStreamEnd(func(s postman.StreamSummary) { pu.onStreamEnd(streamSummary(s)) })}
}
