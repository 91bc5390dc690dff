package main

// The loop-approval gate (upstream_loop_approval) and the emulator's
// per-turn directives and usage.
func init() {
	mutants = append(mutants,
		mutant{"the gate classified as an unknown outcome", "app/turn.go",
			"\tif Gated(err) {\n\t\tif t.claimedKey", "\tif false && Gated(err) {\n\t\tif t.claimedKey",
			"./app/", "LoopApproval"},
		mutant{"a gated group not CONSUMED", "app/turn.go",
			"\t\t\t\treturn g.Gated(t.g.clock.Now(), t.g.cfg.Policy)", "\t\t\t\treturn g.Ambiguous(t.g.clock.Now(), t.g.cfg.Policy)",
			"./app/", "LoopApproval"},
		mutant{"the gate is an unsupported event again", "adapters/postman/decode_envelope.go",
			"\t\treturn d.loopApproval(dataKind)", "\t\treturn d.fail(errs.UpstreamUnsupportedEvent)",
			"./adapters/postman/", "LoopApproval"},
		mutant{"the gate's text not masked", "adapters/postman/client.go",
			"\t\tmask:         c.red.String,\n", "",
			"./adapters/postman/", "LoopApprovalGateNeverShowsASecret"},
		mutant{"the gate's fields unbounded", "adapters/postman/decode_gate.go",
			"\treturn bound(string(v), maxGateField)", "\treturn string(v)",
			"./adapters/postman/", "LoopApproval"},
		mutant{"the gate completes the stream", "domain/completion/rows.go",
			`{"K76", web, GateSeen, EOF, LoopApprovalGated, errs.UpstreamLoopApproval, refGateEnd},`,
			`{"K76", web, GateSeen, EOF, CompleteExplicit, "", refGateEnd},`,
			"./domain/completion/", ""},
		mutant{"the emulator's gate counter never reset by a user turn", "adapters/emulator/turn.go",
			"\t\tc.gated = 0 // a user turn starts", "\t\t// a user turn starts",
			"./adapters/emulator/", "LoopApproval"},
		mutant{"earlier turns' directives apply again", "adapters/emulator/body.go",
			"\t\treq.turnText = newestUserTurn(req.query)", "\t\treq.turnText = req.query",
			"./adapters/emulator/", "NewestUserTurn"},
		mutant{"usage never cumulative", "adapters/emulator/stream.go",
			"prompt, completion := b.contextTokens+ceilDiv4(b.promptBytes)", "prompt, completion := ceilDiv4(b.promptBytes)",
			"./adapters/emulator/", "Usage"},
	)
}
