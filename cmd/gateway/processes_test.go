//go:build unix

package main

import (
	"bufio"
	"crypto/rand"
	"encoding/base64"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/matryer/is"

	"github.com/pmgate/pmgate/adapters/emulator"
)

// gatewayProcess is a real `gateway serve` process built from this module.
type gatewayProcess struct {
	cmd  *exec.Cmd
	base string
	logs *syncBuffer
}

var builtGateway string

func buildGateway(t *testing.T) string {
	t.Helper()
	if builtGateway != "" {
		return builtGateway
	}
	bin := filepath.Join(os.TempDir(), fmt.Sprintf("pmgate-e2e-%d", os.Getpid()))
	out, err := exec.Command("go", "build", "-o", bin, ".").CombinedOutput()
	if err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	builtGateway = bin
	return bin
}

// startProcess runs `gateway serve` with env (plus PATH) and waits until it
// logs its address.
func startProcess(t *testing.T, env map[string]string) *gatewayProcess {
	t.Helper()
	cmd := exec.Command(buildGateway(t), "serve")
	cmd.Env = []string{"PATH=" + os.Getenv("PATH")}
	for k, v := range env {
		cmd.Env = append(cmd.Env, k+"="+v)
	}
	logs := &syncBuffer{}
	stderr, err := cmd.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	addr := make(chan string, 1)
	go func() {
		re := regexp.MustCompile(`"addr":"([0-9.:]+)"`)
		sc := bufio.NewScanner(stderr)
		for sc.Scan() {
			line := sc.Text()
			fmt.Fprintln(logs, line)
			if m := re.FindStringSubmatch(line); m != nil {
				select {
				case addr <- m[1]:
				default:
				}
			}
		}
	}()
	p := &gatewayProcess{cmd: cmd, logs: logs}
	t.Cleanup(func() {
		_ = cmd.Process.Signal(syscall.SIGTERM)
		done := make(chan struct{})
		go func() { _ = cmd.Wait(); close(done) }()
		select {
		case <-done:
		case <-time.After(10 * time.Second):
			_ = cmd.Process.Kill()
		}
	})
	select {
	case a := <-addr:
		p.base = "http://" + a
	case <-time.After(20 * time.Second):
		t.Fatalf("gateway process did not start:\n%s", logs.String())
	}
	return p
}

func TestTwoGatewayProcessesShareOnePostgreSQL(t *testing.T) {
	ctl := os.Getenv("PMGATE_PG_CTL")
	is := is.New(t)
	pgURL := pgSchema(t)
	emu := newEmulator(t)
	key := make([]byte, 32)
	_, _ = rand.Read(key)
	env := map[string]string{
		"PROVIDER_PORT": "0", "PROVIDER_API_KEY": testKey, "PROVIDER_MODELS": testModel,
		"POSTMAN_TRANSPORT_STRATEGY": "access_token", "POSTMAN_ACCESS_TOKEN": testToken, "POSTMAN_ORIGIN": emu.Origin(),
		"POSTMAN_WORKSPACE_ID": testWorkspace, "POSTMAN_MODEL_MAP": testModel + "=GPT_55",
		"SSL_CERT_FILE": emu.CAFile(), "CORRELATION_STORE": "postgres", "CORRELATION_POSTGRES_URL": pgURL,
		"CORRELATION_PRINCIPAL_KEY": base64.RawURLEncoding.EncodeToString(key), "MAX_CONCURRENT_REQUESTS": "64",
	}
	a := startProcess(t, env)
	b := startProcess(t, env)
	sa, sb := &served{base: a.base, emu: emu}, &served{base: b.base, emu: emu}

	// A tool call issued through process A is continued through process B.
	_, cont, _ := pending(t, sa, "issued by process A")
	status, _, e := turnResult(t, sb, chatBody(t, testModel, cont, toolsJSON, ""))
	is.Equal(status, 200) // continued by the other process
	is.Equal(e.Error.Code, "")

	// 32 identical continuations spread over both processes: one dispatch.
	_, race, _ := pending(t, sb, "raced over two processes")
	for _, m := range race {
		if m["role"] == "tool" {
			m["content"] = "#scenario=slow_stream"
		}
	}
	codes := raceContinuations(chatBody(t, testModel, race, toolsJSON, ""), 32, sa, sb)
	is.Equal(emu.Count(emulator.KindToolResponse), 2)              // exactly one more dispatch
	is.Equal(codes["200 "]+codes["409 continuation_inflight"], 32) // the rest in flight or replays

	// Process A killed while a continuation is in flight: never re-sent by B.
	_, killed, _ := pending(t, sa, "A dies mid-dispatch")
	for _, m := range killed {
		if m["role"] == "tool" {
			m["content"] = "#scenario=slow_stream"
		}
	}
	body := chatBody(t, testModel, killed, toolsJSON, "")
	before := emu.Count(emulator.KindToolResponse)
	go func() { _ = raceContinuations(body, 1, sa) }()
	for range 300 {
		if emu.Count(emulator.KindToolResponse) > before {
			break
		}
		time.Sleep(10 * time.Millisecond)
	}
	is.Equal(emu.Count(emulator.KindToolResponse), before+1) // A dispatched
	is.NoErr(a.cmd.Process.Kill())                           // and died (SIGKILL: no settlement)
	status, _, e = turnResult(t, sb, chatBody(t, testModel, killed, toolsJSON, ""))
	is.Equal(status, 409)
	is.Equal(e.Error.Code, "continuation_inflight")          // B sees the claim
	is.Equal(emu.Count(emulator.KindToolResponse), before+1) // and does not send again

	// PostgreSQL stopped and started mid-run.
	if ctl == "" {
		t.Log("PMGATE_PG_CTL is not set: skipping the database restart part")
		return
	}
	_, survivor, _ := pending(t, sb, "survives a database restart")
	if out, err := exec.Command(ctl, "halt").CombinedOutput(); err != nil {
		t.Fatalf("halt: %v\n%s", err, out)
	}
	t.Cleanup(func() { _ = exec.Command(ctl, "start").Run() })
	status, _, e = turnResult(t, sb, chatBody(t, testModel, survivor, toolsJSON, ""))
	is.Equal(status, 503)
	is.Equal(e.Error.Code, "correlation_store_unavailable") // during the outage
	sent := emu.Count(emulator.KindToolResponse)
	is.Equal(sent, before+1) // nothing was dispatched
	if out, err := exec.Command(ctl, "start").CombinedOutput(); err != nil {
		t.Fatalf("start: %v\n%s", err, out)
	}
	var ok bool
	for range 50 { // the pool reconnects
		if status, _, _ = turnResult(t, sb, chatBody(t, testModel, survivor, toolsJSON, "")); status == 200 {
			ok = true
			break
		}
		time.Sleep(100 * time.Millisecond)
	}
	is.True(ok)                                            // the pending group survived the restart
	is.Equal(emu.Count(emulator.KindToolResponse), sent+1) // and was dispatched once
	is.True(!strings.Contains(b.logs.String(), testToken)) // no secret in the process logs
}
