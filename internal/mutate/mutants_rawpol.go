package main

// The shared field policy read over typed values (wirejson.Value,
// rules/policy.go, respapi/decode.go): each defect is caught by the test
// its -run names.
func init() {
	const (
		httpapi = "./adapters/httpapi/"
		policy  = "adapters/httpapi/rules/policy.go"
		decode  = "adapters/httpapi/respapi/decode.go"
		wire    = "adapters/httpapi/wire/wirejson/wirejson.go"
	)
	mutants = append(mutants,
		mutant{"policy: false is not a boolean to an ignored boolean field", policy,
			"\t\tif k == 'f' {\n\t\t\tk = KindBool\n\t\t}\n", "", httpapi, "FieldPolicyRefusalsArePinned"},
		mutant{"policy: a fractional number read as an integer", wire,
			"f != math.Trunc(f) ||", "math.IsNaN(f) ||", httpapi, "FieldPolicyRefusalsArePinned"},
		mutant{"policy: an empty logit_bias refused", policy,
			"if !ok || v.Len() == 0 {", "if !ok {", httpapi, "FieldPolicyRefusalsArePinned"},
		mutant{"responses: reasoning's kind not checked by the policy", decode,
			"\t\tif name == \"reasoning\" {\n\t\t\treturn wr.Reasoning.Value\n\t\t}\n", "", httpapi, "FieldPolicyRefusalsArePinned"},
		mutant{"responses: user echoed as sent, quotes and escapes included", decode,
			"rr.user = f[\"user\"].Text()", "rr.user = string(f[\"user\"].Raw)", httpapi, "FieldPolicyRefusalsArePinned"},
	)
}
