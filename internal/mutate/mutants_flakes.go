package main

// The defects behind flakes under load: each one a moment of scheduling
// that a test now forces.
func init() {
	mutants = append(mutants,
		mutant{"the env-file watcher takes its stamp when it starts, not before the file is read", "cmd/gateway/reload.go",
			"\t\tt := time.NewTicker(envFilePollInterval)\n", "\t\tt := time.NewTicker(envFilePollInterval)\n\t\tlast = fileStamp(src.envPath)\n",
			"./cmd/gateway/", "TestAnEnvFileChangedAsTheGatewayStartsIsReloaded"},
		mutant{"the Messages ping timer's function does not wait until the timer is assigned", "adapters/httpapi/msgapi/stream.go",
			"\t\t<-armed\n", "",
			"./adapters/httpapi/", "TestMessagesStreamPingTimerFiringAtOnceIsSafe"},
	)
}
