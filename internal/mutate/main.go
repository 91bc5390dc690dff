// Command mutate re-measures how many planted defects the test suite catches:
// it copies the tracked files of the module to a temporary folder and, for
// each mutant of the curated list below (a realistic defect: one exact edit of
// one file), applies it, runs the tests that should catch it and restores the
// file. A mutant is killed when those tests fail. The list is kept small and
// targeted so that a run takes minutes; it names the defects the mutation run
// of the hardening issue left alive and the ones the hardening guards against.
//
//	go run ./internal/mutate [-run REGEXP] [-v]
//
// Exit status 1 when a mutant survives, no longer applies (the code changed:
// update the list) or does not compile.
package main

import (
	"bytes"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"time"
)

type mutant struct {
	name     string
	file     string
	old, new string
	pkg      string // package whose tests should catch it
	run      string // -run pattern ("" for all)
}

var mutants = []mutant{
	{"results matched to calls by position", "app/gateway.go",
		"for _, call := range gr.Calls {\n\t\tc.Results = append(c.Results, ports.ContinuationResult{UpstreamCallID: call.UpstreamID, OriginalName: call.OriginalName, Content: byID[call.PublicID]})",
		"for i, call := range gr.Calls {\n\t\tc.Results = append(c.Results, ports.ContinuationResult{UpstreamCallID: call.UpstreamID, OriginalName: call.OriginalName, Content: cont.Results[i].Content})",
		"./app/", ""},
	{"calls of one turn with two upstream groups admitted", "app/turn.go",
		"if c.UpstreamGroupID != groupID {", "if false && c.UpstreamGroupID != groupID {", "./app/", ""},
	{"a disconnect mid-continuation leaves the group INFLIGHT", "app/turn.go",
		"if (t.claimedKey != \"\" && !t.settled) || (t.anchor != nil && !t.anchorSettled) {\n\t\t\tt.fail(context.Background()", "if (false && t.claimedKey != \"\" && !t.settled) || (t.anchor != nil && !t.anchorSettled) {\n\t\t\tt.fail(context.Background()", "./app/", ""},
	{"a tool call without upstream id admitted", "app/turn.go",
		"if _, ok := byName[c.Name]; !ok || c.UpstreamID == \"\" {", "if _, ok := byName[c.Name]; !ok {", "./app/", ""},
	{"a full store still sends the tool turn upstream", "app/gateway.go",
		"\tif !ok {\n\t\tg.log.WarnContext(ctx, \"correlation store full", "\tif false && !ok {\n\t\tg.log.WarnContext(ctx, \"correlation store full", "./app/", ""},
	{"API key digests compared on a prefix", "adapters/httpapi/auth.go",
		"constantTimeCompare(digest[:], slots[i].digest[:])", "constantTimeCompare(digest[:2], slots[i].digest[:2])", "./adapters/httpapi/", ""},
	{"a secret that prefixes another replaced first", "domain/secret/redact.go",
		"\t\tif len(a) != len(b) {\n\t\t\treturn len(b) - len(a)\n\t\t}\n", "", "./domain/secret/", ""},
	{"the memory store's claim is a read-copy-write outside the lock", "adapters/memstore/memstore.go",
		"\ts.mu.Lock()\n\tdefer s.mu.Unlock()\n\treturn s.reg.Update(key, fn)",
		"\ts.mu.Lock()\n\tg, ok := s.reg.Get(key)\n\ts.mu.Unlock()\n\tif !ok {\n\t\treturn s.reg.Update(key, fn)\n\t}\n\tcp := g.Clone()\n\td, err := fn(&cp)\n\tif err != nil {\n\t\treturn d, err\n\t}\n\ts.mu.Lock()\n\tdefer s.mu.Unlock()\n\t_, err = s.reg.Update(key, func(x *correlation.Group) (correlation.Decision, error) { *x = cp; return d, nil })\n\treturn d, err",
		"./adapters/memstore/", ""},
	{"any Host is served", "adapters/httpapi/host.go",
		"return p.names[strings.TrimSuffix(host, \".\")]", "return true", "./adapters/httpapi/", "Host"},
	{"any browser Origin is served", "adapters/httpapi/host.go",
		"\treturn p.allows(u.Hostname())", "\treturn true", "./adapters/httpapi/", "Host"},
	{"unclean paths reach the mux (redirect)", "adapters/httpapi/server.go",
		"p != \"\" && p[0] == '/' && path.Clean(p) == p", "path.IsAbs(p)", "./adapters/httpapi/", "Unclean"},
	{"lone low surrogates accepted", "adapters/httpapi/rules/text.go",
		"// low surrogate without a high one\n\t\t\t\tok = false", "// low surrogate without a high one\n\t\t\t\tok = true", "./adapters/httpapi/", "InvalidText"},
	{"no connection cap", "adapters/httpapi/conn.go",
		"if l.open < l.max {", "if true {", "./adapters/httpapi/", "Idle|Busy"},
	{"net/http's plain-text answers passed through", "adapters/httpapi/conn.go",
		"if out, ok := c.l.rewriteBuiltin(p); ok {", "if out, ok := c.l.rewriteBuiltin(p); false && ok {", "./adapters/httpapi/", "NetHTTP"},
	{"a second request_id added to lines that have one", "adapters/httpapi/server.go",
		"!h.has && !h.grouped && !recordHasRequestID(r)", "!h.grouped", "./adapters/httpapi/", "RequestID"},
	{"the upstream's Retry-After not exposed", "adapters/postman/client.go",
		"func (e *retryAfterError) RetryAfter() time.Duration { return e.after }", "func (e *retryAfterError) RetryAfter() time.Duration { return 0 }", "./cmd/gateway/", "RetryAfterReaches"},
	{"no body deadline", "adapters/httpapi/handlers.go",
		"deadline := rc.SetReadDeadline(s.now().Add(s.cfg.BodyReadTimeout)) == nil", "deadline := false", "./cmd/gateway/", "SlowBody"},
	// The owner's budget (docs/USAGE.md).
	{"the daily quota admits one too many", "domain/usage/usage.go",
		"b.DayDispatches >= l.DispatchesPerDay", "b.DayDispatches > l.DispatchesPerDay", "./domain/usage/", ""},
	{"the bucket never refills", "domain/usage/usage.go",
		"b.Tokens = math.Min(l.Burst(), b.Tokens+el.Seconds()*float64(l.RequestsPerMinute)/60)", "b.Tokens = math.Min(l.Burst(), b.Tokens)", "./domain/usage/", "Bucket"},
	{"an inference key reads the operator views", "adapters/httpapi/scope.go",
		"if sl := slotFrom(r.Context()); sl == nil || !sl.admin {", "if sl := slotFrom(r.Context()); sl == nil {", "./adapters/httpapi/", "InferenceKey"},
	{"the key file's scope ignored", "adapters/httpapi/keyring.go",
		"admin: s.Admin(), limits: s.Limits}", "admin: true, limits: s.Limits}", "./adapters/httpapi/", "InferenceKey"},
	{"the memory ledger's admission outside its lock", "adapters/memstore/usage.go",
		"\tu.mu.Lock()\n\tdefer u.mu.Unlock()\n\tcp := u.budgets[slot]\n\tif err := fn(&cp); err != nil {\n\t\treturn err\n\t}\n\tu.budgets[slot] = cp",
		"\tu.mu.Lock()\n\tcp := u.budgets[slot]\n\tu.mu.Unlock()\n\tif err := fn(&cp); err != nil {\n\t\treturn err\n\t}\n\tu.mu.Lock()\n\tdefer u.mu.Unlock()\n\tu.budgets[slot] = cp",
		"./adapters/memstore/", "Usage"},

	// Survivors of the second hardening run, each caught by its own package.
	{"a carry of a huge exponent dropped", "domain/canon/number.go",
		"\t\t\ts -= 10\n\t\t\tm++\n", "\t\t\ts -= 10\n", "./domain/canon/", ""},
	{"Equal ignores members only one side has", "domain/canon/echo.go",
		"if !ok || len(x) != len(y) {\n\t\t\treturn false\n\t\t}\n\t\tfor k, e := range x {", "if !ok {\n\t\t\treturn false\n\t\t}\n\t\tfor k, e := range x {", "./domain/canon/", ""},
	{"the echo rule drops a defaulted property whatever its value", "domain/canon/echo.go",
		"drop = pd.has && Equal(v, pd.value)", "drop = pd.has", "./domain/canon/", ""},
	{"the $ref-sibling merge check covers one direction", "domain/toolschema/lower.go",
		"has(a, \"properties\") && has(b, \"additionalProperties\") || has(b, \"properties\") && has(a, \"additionalProperties\")",
		"has(a, \"properties\") && has(b, \"additionalProperties\")", "./domain/toolschema/", ""},
	{"a reload keeps a slot's old limit", "adapters/httpapi/keyring.go",
		"\tl.max = s.MaxConcurrent\n", "\tif l.max == 0 {\n\t\tl.max = s.MaxConcurrent\n\t}\n", "./adapters/httpapi/", ""},
	{"a reload starts a slot's limiter empty", "adapters/httpapi/keyring.go",
		"\t\t\tif l == nil {\n\t\t\t\tl = &limiter{}", "\t\t\tif true {\n\t\t\t\tl = &limiter{}", "./adapters/httpapi/", ""},
	{"a per-key 429 keeps its global place", "adapters/httpapi/handlers.go",
		"\tif !slot.take() {\n\t\t<-global\n", "\tif !slot.take() {\n", "./adapters/httpapi/", ""},
	{"a key revoked while its body arrives is dispatched", "adapters/httpapi/handlers.go",
		"if sl = s.keys.current(sl); sl == nil {", "if false {", "./adapters/httpapi/", ""},
	{"a refused key file's revocations ignored", "domain/keyring/keyring.go",
		"return ok && d == hex.EncodeToString(digest[:])", "_, _ = d, ok\n\t\treturn true", "./adapters/keyfile/", ""},
	{"the key-file watcher's first look trusts the start-up stat", "adapters/keyfile/keyfile.go",
		"if !forced && seen && k == lastStat {", "if !forced && (!seen || k == lastStat) {", "./adapters/keyfile/", ""},
	{"a FIFO at the key file path is opened and read", "adapters/keyfile/keyfile.go",
		"os.OpenFile(path, os.O_RDONLY|syscall.O_NONBLOCK, 0)\n\tif err != nil {\n\t\tif missingOK", "os.Open(path)\n\tif err != nil {\n\t\tif missingOK", "./adapters/keyfile/", "FIFO"},
	{"an edit through a symlink replaces the link", "adapters/keyfile/keyfile.go",
		"\tpath, err := resolve(path)\n", "\tpath, err := path, error(nil)\n", "./adapters/keyfile/", ""},
	{"C1 controls accepted in key notes", "domain/keyring/keyring.go",
		"case r < 0x20, r >= 0x7f && r <= 0x9f, r == 0xfffd,", "case r < 0x20, r == 0x7f, r == 0xfffd,", "./domain/keyring/", ""},
	{"the connection cap closes the newest idle connection", "adapters/httpapi/conn.go",
		"if victim == nil || t.Before(since) {", "if victim == nil || t.After(since) {", "./adapters/httpapi/", "Idle"},
	{"a high+high surrogate pair accepted", "domain/jsonlex/jsonlex.go",
		"func IsLow(r rune) bool { return r >= 0xDC00 && r < 0xE000 }", "func IsLow(r rune) bool { return r >= 0xD800 && r < 0xE000 }", "./adapters/httpapi/", "Surrogate|InvalidText"},
	{"an Origin of any scheme accepted", "adapters/httpapi/host.go",
		"(u.Scheme != \"http\" && u.Scheme != \"https\") || u.Host == \"\"", "u.Host == \"\"", "./adapters/httpapi/", "Origin"},
	{"/v1/responses defaults parallel_tool_calls to false", "adapters/httpapi/respapi/decode.go",
		"rules.OptionalBool(wr.ParallelToolCalls, \"parallel_tool_calls\", true)", "rules.OptionalBool(wr.ParallelToolCalls, \"parallel_tool_calls\", false)", "./adapters/httpapi/", ""},
	{"answers before routing under /admin lack the browser headers", "adapters/httpapi/server.go",
		"\t\tif strings.HasPrefix(r.URL.Path, pathAdmin) {\n\t\t\tsetAdminHeaders(w.Header())", "\t\tif strings.HasPrefix(r.URL.Path, pathAdmin+\"/static/\") {\n\t\t\tsetAdminHeaders(w.Header())", "./adapters/httpapi/", "Admin"},
	{"a chunked request keeps the connection open", "adapters/httpapi/server.go",
		"if len(r.TransferEncoding) > 0 {", "if false {", "./adapters/httpapi/", "Chunked"},
	{"a full anchor store drops another principal's anchor first", "domain/conversation/registry.go",
		"\t\tvictim := r.victim(a.PrincipalID)\n", "\t\tvictim := r.order[classTombstone].Front()\n\t\tif victim == nil {\n\t\t\tvictim = r.order[classActive].Front()\n\t\t}\n", "./adapters/memstore/", "Anchor"},
	{"the anchor pool's tie goes to another principal", "domain/conversation/registry.go",
		"case n < best.n(), bestID == p, id != p && id > bestID:", "case n < best.n(), bestID == p, id > bestID:", "./domain/conversation/", ""},
	{"pgstore: re-recording a transcript at capacity drops one anchor too many", "adapters/pgstore/anchors.go",
		"\t\t\tif err := writeAnchor(ctx, tx, old, cp); err != nil {\n\t\t\t\treturn err\n\t\t\t}\n\t\t\tcount--\n", "\t\t\tif err := writeAnchor(ctx, tx, old, cp); err != nil {\n\t\t\t\treturn err\n\t\t\t}\n", "./adapters/pgstore/", "Anchor"},
	{"pgstore: a full store drops the globally oldest anchor", "adapters/pgstore/anchors.go",
		"AND principal_id = (SELECT principal_id FROM owner)", "AND $1 <> ''", "./adapters/pgstore/", "Anchor"},
	{"postman: data.id of any event taken as the conversation id", "adapters/postman/decode_conversation.go",
		"\t\tif d.lastType == evConversation {", "\t\tif true {", "./adapters/postman/", ""},
	{"postman: data.conversation_id no longer read", "adapters/postman/decode_conversation.go",
		"convIDKeys     = [...]string{\"conversationId\", \"conversation_id\"}", "convIDKeys     = [...]string{\"conversationId\", \"conversationId\"}", "./adapters/postman/", ""},
	{"postman: an upstream 503 reported as a server error", "adapters/postman/client.go",
		"\tcase st == http.StatusServiceUnavailable:\n", "\tcase false:\n", "./adapters/postman/", ""},
	{"postman: an upstream 503 on tool results is retryable", "adapters/postman/client.go",
		"\tcase st == http.StatusServiceUnavailable && continuation:\n", "\tcase false:\n", "./adapters/postman/", ""},
	{"a refusal's variable name redacted", "cmd/gateway/config.go",
		"return setting.Refuse(setting.Name(variable), strings.ReplaceAll(rule, \"%\", \"%%\"))", "return setting.Refuse(setting.Name(variable), \"%s\", rule)", "./cmd/gateway/", "KeepTheirName"},
	{"/metrics served without a key", "adapters/httpapi/operator.go",
		"\t\tif s.cfg.MetricsOpen {\n\t\t\tmetrics = open", "\t\tif true {\n\t\t\tmetrics = open", "./adapters/httpapi/", "Metrics"},
	{"a slot's principal ignores its key's digest", "adapters/httpapi/keyring.go",
		"Principal(principalKey, \"slot\\x00\"+id+\"\\x00\"+hex.EncodeToString(digest[:]))", "Principal(principalKey, \"slot\\x00\"+id+\"\\x00\"+hex.EncodeToString(digest[:0]))", "./adapters/httpapi/", "Rotated|Principal"},
	{"keys revoke refuses to write when the rest of the file is refused", "cmd/gateway/keys.go",
		"err := keyfile.Edit(path, nil, false, func(r keyring.Ring) (keyring.Ring, error) {", "err := keyfile.Edit(path, configured, false, func(r keyring.Ring) (keyring.Ring, error) {", "./cmd/gateway/", "TestKeys"},
	{"keys new writes an allowlist it cannot check", "cmd/gateway/keys.go",
		"if *models != \"\" && configured == nil {", "if false {", "./cmd/gateway/", "TestKeys"},
	{"verify accepts repeated keys", "cmd/gateway/report.go",
		"\t\t\tif top.keys[k] {", "\t\t\tif false && top.keys[k] {", "./cmd/gateway/", "Verify"},
	{"verify passes a report whose own verdict is fail", "cmd/gateway/verify.go",
		"if !o.writing && (r.Verdict != \"pass\" || len(r.Failures) != 0) {", "if false {", "./cmd/gateway/", "Verify"},
	{"verify accepts a report written in the future", "cmd/gateway/verify.go",
		"case t.Sub(o.now) > 5*time.Minute:", "case false:", "./cmd/gateway/", "Verify"},
	{"verify accepts a continuations budget above the default", "cmd/gateway/verify.go",
		"||\n\t\tp.LimitMaxContinuations > d.LimitMaxContinuations {", " {", "./cmd/gateway/", "Verify"},
	{"the hygiene scan misses a six-byte secret", "cmd/gateway/report.go",
		"if len(s) >= 6 && bytes.Contains(raw, []byte(s)) {", "if len(s) > 6 && bytes.Contains(raw, []byte(s)) {", "./cmd/gateway/", "Hygiene"},
	{"verify accepts trailing data", "cmd/gateway/report.go",
		"if _, err := dec.Token(); err != io.EOF {\n\t\treturn r, fmt.Errorf(\"data after the report object\")", "if _, err := dec.Token(); false && err != io.EOF {\n\t\treturn r, fmt.Errorf(\"data after the report object\")", "./cmd/gateway/", "Verify"},
	{"/health verified by an emulator report", "cmd/gateway/verified.go",
		"case r.Mode != \"live\":", "case false:", "./cmd/gateway/", "Health"},
	{"/health accepts a report without its MAC", "cmd/gateway/verified.go",
		"\tcase !authentic:", "\tcase false:", "./cmd/gateway/", "Health"},
	// "PROBE_REPORT read from anything" moved with its code to cmd/gateway/files.go:
	// mutants_files.go's "a configured file read whatever its type" plants it there.
}

func main() {
	only := flag.String("run", "", "only mutants whose name matches this regexp")
	verbose := flag.Bool("v", false, "print the output of surviving mutants' test runs")
	flag.Parse()
	var re *regexp.Regexp
	if *only != "" {
		re = regexp.MustCompile(*only)
	}
	root, err := exec.Command("go", "list", "-m", "-f", "{{.Dir}}").Output()
	if err != nil {
		fail("go list -m: %v", err)
	}
	src := strings.TrimSpace(string(root))
	dir, err := os.MkdirTemp("", "pmgate-mutate-")
	if err != nil {
		fail("%v", err)
	}
	defer os.RemoveAll(dir)
	files, err := exec.Command("git", "-C", src, "ls-files", "--cached", "--others", "--exclude-standard").Output()
	if err != nil {
		fail("git ls-files: %v", err)
	}
	for _, f := range strings.Split(strings.TrimSpace(string(files)), "\n") {
		b, err := os.ReadFile(filepath.Join(src, f))
		if err != nil {
			continue // deleted in the work tree
		}
		_ = os.MkdirAll(filepath.Dir(filepath.Join(dir, f)), 0o755)
		if err := os.WriteFile(filepath.Join(dir, f), b, 0o644); err != nil {
			fail("%v", err)
		}
	}
	killed, total, broken, skipped := 0, 0, 0, 0
	pgURL := os.Getenv("PMGATE_PG_URL")
	for _, m := range mutants {
		if re != nil && !re.MatchString(m.name) {
			continue
		}
		pg := m.pkg == "./adapters/pgstore/" // needs PostgreSQL: skipped without PMGATE_PG_URL
		if pg && pgURL == "" {
			skipped++
			fmt.Printf("skipped   %s (needs PMGATE_PG_URL)\n", m.name)
			continue
		}
		total++
		path := filepath.Join(dir, m.file)
		orig, err := os.ReadFile(path)
		if err != nil || bytes.Count(orig, []byte(m.old)) != 1 {
			broken++
			fmt.Printf("STALE     %s (%s: the edit no longer applies once)\n", m.name, m.file)
			continue
		}
		if err := os.WriteFile(path, bytes.Replace(orig, []byte(m.old), []byte(m.new), 1), 0o644); err != nil {
			fail("%v", err)
		}
		// A mutant that does not compile proves nothing about the tests.
		vet := exec.Command("go", "vet", m.pkg)
		vet.Dir = dir
		if out, err := vet.CombinedOutput(); err != nil {
			_ = os.WriteFile(path, orig, 0o644)
			broken++
			fmt.Printf("NOBUILD   %s (%s): %s\n", m.name, m.file, firstLine(out))
			continue
		}
		args := []string{"test", "-count=1", "-timeout", "300s"}
		if m.run != "" {
			args = append(args, "-run", m.run)
		}
		cmd := exec.Command("go", append(args, m.pkg)...)
		cmd.Dir = dir
		cmd.Env = os.Environ()
		if !pg {
			cmd.Env = append(cmd.Env, "PMGATE_PG_URL=") // memory only: no database needed
		}
		start := time.Now()
		out, err := cmd.CombinedOutput()
		_ = os.WriteFile(path, orig, 0o644)
		took := time.Since(start).Round(100 * time.Millisecond)
		if err != nil {
			killed++
			fmt.Printf("killed    %s (%s, %s)\n", m.name, m.pkg, took)
			continue
		}
		fmt.Printf("SURVIVED  %s (%s, %s)\n", m.name, m.pkg, took)
		if *verbose {
			os.Stdout.Write(out)
		}
	}
	fmt.Printf("score: %d of %d mutants killed", killed, total)
	if broken > 0 {
		fmt.Printf(" (%d stale)", broken)
	}
	if skipped > 0 {
		fmt.Printf("; %d skipped without PostgreSQL", skipped)
	}
	fmt.Println()
	if killed != total {
		os.RemoveAll(dir) // os.Exit skips the deferred removal
		os.Exit(1)
	}
}

func firstLine(b []byte) string {
	line, _, _ := strings.Cut(strings.TrimSpace(string(b)), "\n")
	return line
}

func fail(format string, args ...any) {
	fmt.Fprintf(os.Stderr, "mutate: "+format+"\n", args...)
	os.Exit(1)
}
