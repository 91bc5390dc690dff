package main

import "pmgate/adapters/postman"

// streamSummaryOption feeds the adapter's per-stream summary to the probe.
// Until the adapter reports one, the probe records only what the stream itself
// exposes (outcome, model observed), and the report's rule evidence is empty.
func streamSummaryOption(pu *probeUpstream) []postman.Option { return nil }
