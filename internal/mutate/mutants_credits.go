package main

// Mutants of the service's credit report (docs/USAGE.md, "Postman credits as
// the service reports them"): the record, the once-per-threshold-and-cycle
// warning, the threshold rule, the report kept on a failing stream, the
// access line, the emulator's plan, and the views.
func init() {
	mutants = append(mutants,
		mutant{"the usage event's plan is never kept", "adapters/postman/decode_output.go",
			"\td.credit = r\n\tif d.cfg.onCredits != nil {", "\td.credit = r\n\tif false && d.cfg.onCredits != nil {",
			"./adapters/postman/", "CreditReport"},
		mutant{"a threshold is logged with every report", "adapters/postman/credits.go",
			"\t\tif !c.logged[t.Value] {", "\t\tif true {",
			"./adapters/postman/", "CreditReport"},
		mutant{"a new cycle does not make its thresholds new", "adapters/postman/credits.go",
			"\tif !r.CycleEnd.Equal(c.cycle) || c.logged == nil {", "\tif c.logged == nil {",
			"./adapters/postman/", "CreditReport"},
		mutant{"a threshold is crossed one percent early", "ports/credits.go",
			"r.Usage*100 >= t.Value*r.Limit", "r.Usage*100 >= (t.Value-1)*r.Limit",
			"./ports/", "ThresholdIsCrossed"},
		mutant{"an exhausted state is not kept", "adapters/postman/decode_output.go",
			"\t\td.report(r) // the exhausted and blocked states are the owner's news too\n",
			"\t\tif state == \"AVAILABLE\" {\n\t\t\td.report(r)\n\t\t}\n",
			"./adapters/postman/", "ExhaustedReport"},
		mutant{"the outcome line leaves out the request's report", "adapters/postman/stream.go",
			"\tif r := s.d.credit; r.Known {", "\tif r := s.d.credit; false && r.Known {",
			"./adapters/postman/", "OutcomeLine"},
		mutant{"the emulator's plan does not grow", "adapters/emulator/credits.go",
			"s.credits.Usage = max(min(s.credits.Usage+s.credits.PerQuery, s.credits.Limit), s.credits.Usage)", "_ = s.credits.PerQuery",
			"./adapters/emulator/", "UsageEventsReportThePlan"},
		mutant{"/metrics leaves out the credits gauges", "adapters/ops/monitor.go",
			"\tif cfg.Credits != nil {\n\t\tm.reg.MustRegister(&creditsCollector{m: m})", "\tif false && cfg.Credits != nil {\n\t\tm.reg.MustRegister(&creditsCollector{m: m})",
			"./cmd/gateway/", "TestTheServicesCreditReportIsShownAsReportedEverywhere"},
		mutant{"/health leaves out the credit report", "cmd/gateway/serve.go",
			"\t\tif c := monitor.Credits(); c != nil {\n\t\t\th[\"upstream_credits\"] = c", "\t\tif c := monitor.Credits(); false && c != nil {\n\t\t\th[\"upstream_credits\"] = c",
			"./cmd/gateway/", "TestTheServicesCreditReportIsShownAsReportedEverywhere"},
		mutant{"gateway usage's table leaves out the credit report", "cmd/gateway/usage.go",
			"\twriteCredits(w, rep.UpstreamCredits)\n", "",
			"./cmd/gateway/", "TestTheServicesCreditReportIsShownAsReportedEverywhere"},
		mutant{"the control page never shows the credit report", "adapters/ops/adminui/app.js",
			"    renderCredits(l.upstream_credits);\n", "",
			"./cmd/gateway/", "TestTheAdminPageShowsTheOwnersFirstScreen"},
	)
}
