package main

// The lead's own repairs of this session: a SIGHUP right after a start, and
// a log reader that waits for access lines instead of polling.
func init() {
	mutants = append(mutants,
		mutant{"a finished request's after-response work wakes no caller of Settled", "adapters/httpapi/conn.go",
			"\t\tclose(ch)\n", "\t\t_ = ch\n",
			"./adapters/httpapi/", "TestSettledWaitsForTheAccessLinesStillToBeWritten"},
		mutant{"serve catches SIGHUP for its reload only once the gateway listens", "cmd/gateway/serve.go",
			"\tgw.enableReload(hup, src, env, lc, envStamp)\n", "\tsignal.Stop(hup)\n\thup = notifyHUP()\n\tgw.enableReload(hup, src, env, lc, envStamp)\n",
			"./cmd/gateway/", "TestASIGHUPAsTheGatewayStartsIsAReload"},
	)
}
