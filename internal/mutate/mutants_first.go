package main

// The first hour, round 3 (issue 38): check-config, the ingress's first
// mistakes, the re-probe and the key file.
func init() {
	mutants = append(mutants,
		mutant{"a refused strategy hides its own variables again", "adapters/postman/pmconfig/config.go",
			"\t\tswitch meant := strategyMeant(getenv); meant {", "\t\tswitch meant := c.Strategy; meant {",
			"./adapters/postman/pmconfig/", "OneRun|Strategyless"},
		mutant{"an enum's case slip gets no did-you-mean", "domain/setting/setting.go",
			"\t\tif fold(raw) == fold(v) {", "\t\tif raw == v+\"\\x00\" {",
			"./domain/setting/", "Enum"},
		mutant{"the did-you-mean hint is suppressed when check-config refuses", "cmd/gateway/demo.go",
			"\t\tfor _, w := range cfg.fileWarnings {", "\t\tfor _, w := range cfg.fileWarnings[:0] {",
			"./cmd/gateway/", "TestCheckConfigNamesEveryMistake"},
		mutant{"a BOM eats line 1 of the env file", "cmd/gateway/config.go",
			"raw = bytes.TrimPrefix(raw, []byte(\"\\xef\\xbb\\xbf\"))", "raw = bytes.TrimPrefix(raw, []byte(\"\\xff\"))",
			"./cmd/gateway/", "ByteOrderMark"},
		mutant{"a key refusal does not say which form is accepted", "adapters/httpapi/auth.go",
			"return r, rules.Refuse(errs.InvalidAPIKey, \"\", authProblem(r.Header))", "return r, errs.New(errs.InvalidAPIKey)",
			"./adapters/httpapi/", "KeyRefusal"},
		mutant{"an Anthropic system prompt is dropped on the chat route", "adapters/httpapi/chatapi/decode.go",
			"\t// refused: the body is the Messages API's\n\t\"system\",\n\t// accepted and ignored", "\t// accepted and ignored",
			"./adapters/httpapi/", "AnthropicBody"},
		mutant{"a failing probe replaces the passing report", "cmd/gateway/probe.go",
			"kept := res.report.Verdict != \"pass\" && passingReportAt(out)", "kept := false",
			"./cmd/gateway/", "TheDailyReprobe"},
		mutant{"a key file edit drops the file's group", "adapters/keyfile/keyfile.go",
			"mode = old.Mode().Perm()&0o660 | 0o600", "mode = 0o600",
			"./adapters/keyfile/", "KeepsTheFiles"},
		mutant{"flags after the slot id are ignored", "cmd/gateway/keys.go",
			"parseFlags(fs, flagsFirst(fs, args), keysUsage, stdout)", "parseFlags(fs, args, keysUsage, stdout)",
			"./cmd/gateway/", "KeysFlagsMay"},
	)
}
