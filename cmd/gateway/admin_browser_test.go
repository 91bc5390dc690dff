package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/chromedp/cdproto/cdp"
	cdplog "github.com/chromedp/cdproto/log"
	"github.com/chromedp/cdproto/page"
	"github.com/chromedp/cdproto/runtime"
	"github.com/chromedp/chromedp"
	"github.com/chromedp/chromedp/kb"
)

// The control page is checked in a real browser: Debian's chromium, driven
// over the DevTools protocol with chromedp (no browser download). CI sets
// PMGATE_BROWSER=1, which makes a missing chromium a failure; locally the tests
// skip only when chromium is absent and PMGATE_BROWSER is unset.

// chromiumPath finds the system browser (PMGATE_CHROMIUM overrides).
func chromiumPath(t *testing.T) string {
	t.Helper()
	if p := os.Getenv("PMGATE_CHROMIUM"); p != "" {
		return p
	}
	for _, name := range []string{"chromium", "chromium-browser", "google-chrome"} {
		if p, err := exec.LookPath(name); err == nil {
			return p
		}
	}
	if os.Getenv("PMGATE_BROWSER") == "1" {
		t.Fatal("PMGATE_BROWSER=1 but no chromium on PATH (apt-get install chromium)")
	}
	t.Skip("no chromium on PATH; set PMGATE_BROWSER=1 to require the browser tests")
	return ""
}

// screenshotDir is the untracked folder the screenshots go to.
func screenshotDir(t *testing.T) string {
	dir := os.Getenv("PMGATE_SCREENSHOTS")
	if dir == "" {
		dir = filepath.Join("..", "..", "bin", "screenshots")
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	return dir
}

// browserLog collects every console error, uncaught exception, browser log
// error and CSP violation the page produces.
type browserLog struct {
	mu      sync.Mutex
	entries []string
}

func (b *browserLog) add(s string) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.entries = append(b.entries, s)
}

// take returns and clears what was collected.
func (b *browserLog) take() []string {
	b.mu.Lock()
	defer b.mu.Unlock()
	out := b.entries
	b.entries = nil
	return out
}

// cspProbe records securitypolicyviolation events in the page itself; it is
// injected by the browser before the page's own script, so the policy does
// not apply to it.
const cspProbe = `window.__csp = []; document.addEventListener("securitypolicyviolation", (e) => window.__csp.push(e.violatedDirective + " " + e.blockedURI));`

func newBrowser(t *testing.T) (context.Context, *browserLog) {
	t.Helper()
	exe := chromiumPath(t)
	alloc, cancelAlloc := chromedp.NewExecAllocator(context.Background(),
		chromedp.ExecPath(exe), chromedp.Headless, chromedp.NoSandbox, chromedp.DisableGPU, chromedp.NoFirstRun,
		chromedp.NoDefaultBrowserCheck, chromedp.UserDataDir(t.TempDir()), chromedp.WindowSize(1280, 800),
		chromedp.Flag("disable-quic", true), chromedp.Flag("disable-background-networking", true),
		chromedp.Flag("disable-component-update", true), chromedp.Flag("disable-sync", true),
		chromedp.Flag("disable-dev-shm-usage", true), chromedp.Flag("disable-extensions", true),
		chromedp.Flag("disable-default-apps", true), chromedp.Flag("no-proxy-server", true))
	ctx, cancel := chromedp.NewContext(alloc)
	ctx, cancelTimeout := context.WithTimeout(ctx, 90*time.Second)
	t.Cleanup(func() { cancelTimeout(); cancel(); cancelAlloc() })
	bl := &browserLog{}
	if err := chromedp.Listen(ctx, func(ev any) {
		switch ev := ev.(type) {
		case *runtime.EventConsoleAPICalled:
			if ev.Type == runtime.ConsoleAPICalledTypeError || ev.Type == runtime.ConsoleAPICalledTypeWarning {
				var parts []string
				for _, a := range ev.Args {
					parts = append(parts, string(a.Value)+a.Description)
				}
				bl.add("console." + string(ev.Type) + ": " + strings.Join(parts, " "))
			}
		case *runtime.EventExceptionThrown:
			bl.add("exception: " + ev.ExceptionDetails.Text)
		case *cdplog.EventEntryAdded:
			if ev.Entry.Level == cdplog.EntryLevelError || ev.Entry.Level == cdplog.EntryLevelWarning {
				bl.add("log " + string(ev.Entry.Source) + ": " + ev.Entry.Text)
			}
		}
	}); err != nil {
		t.Fatal(err)
	}
	if err := chromedp.Do(ctx, chromedp.Func(func(ctx context.Context, tg *chromedp.Target) error {
		if _, err := cdp.Call(ctx, tg, cdplog.Enable, cdp.Empty{}); err != nil {
			return err
		}
		_, err := cdp.Call(ctx, tg, page.AddScriptToEvaluateOnNewDocument, page.AddScriptToEvaluateOnNewDocumentParams{Source: cspProbe})
		return err
	})); err != nil {
		t.Fatal(err)
	}
	return ctx, bl
}

func eval[T any](t *testing.T, ctx context.Context, js string) T {
	t.Helper()
	v, err := chromedp.Run(ctx, chromedp.Evaluate[T](js))
	if err != nil {
		t.Fatalf("evaluate %s: %v", js, err)
	}
	return v
}

// within polls a JavaScript condition until it holds or d passes.
func within(t *testing.T, ctx context.Context, d time.Duration, what, js string) time.Duration {
	t.Helper()
	start := time.Now()
	for {
		if eval[bool](t, ctx, js) {
			return time.Since(start)
		}
		if time.Since(start) > d {
			t.Fatalf("%s: not within %s (%s)", what, d, js)
		}
		time.Sleep(25 * time.Millisecond)
	}
}

func do(t *testing.T, ctx context.Context, steps ...chromedp.Action[chromedp.Void]) {
	t.Helper()
	if err := chromedp.Do(ctx, steps...); err != nil {
		t.Fatal(err)
	}
}

func shot(t *testing.T, ctx context.Context, dir, name string) {
	t.Helper()
	buf, err := chromedp.Run(ctx, chromedp.FullScreenshot(100))
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, name), buf, 0o644); err != nil {
		t.Fatal(err)
	}
}

// noErrors fails on any collected console error or CSP violation; allow
// lists substrings of entries that the step expects (a refused key's 401).
func noErrors(t *testing.T, ctx context.Context, bl *browserLog, step string, allow ...string) {
	t.Helper()
next:
	for _, e := range bl.take() {
		for _, a := range allow {
			if strings.Contains(e, a) {
				continue next
			}
		}
		t.Errorf("%s: browser reported %s", step, e)
	}
	if v := eval[[]string](t, ctx, `window.__csp || []`); len(v) > 0 {
		t.Errorf("%s: CSP violations %v", step, v)
	}
}

func TestTheAdminPageInABrowser(t *testing.T) {
	ctx, bl := newBrowser(t)
	dir := screenshotDir(t)
	s := serve(t, "web_session", nil)
	admin := s.base + "/admin"

	// The page loads, asks for the key and shows no data.
	do(t, ctx, chromedp.EmulateViewport(1280, 800), chromedp.Navigate(admin), chromedp.WaitVisible(chromedp.ID("key")))
	if !eval[bool](t, ctx, `document.getElementById("data").hidden`) {
		t.Fatal("data is visible before sign-in")
	}
	noErrors(t, ctx, bl, "load")
	shot(t, ctx, dir, "admin-login.png")

	// A wrong key: an error, no data, nothing kept.
	do(t, ctx, chromedp.SendKeys(chromedp.ID("key"), "sk-wrong-key-0000000000"), chromedp.Click(chromedp.ID("open")))
	within(t, ctx, 5*time.Second, "wrong key error", `!document.getElementById("login-error").hidden`)
	if msg := eval[string](t, ctx, `document.getElementById("login-error").textContent`); !strings.Contains(msg, "invalid_api_key") {
		t.Errorf("wrong key message %q", msg)
	}
	if eval[bool](t, ctx, `!document.getElementById("data").hidden || sessionStorage.length > 0 || document.getElementById("strategy").textContent !== ""`) {
		t.Error("a wrong key showed data or was kept")
	}
	noErrors(t, ctx, bl, "wrong key", "401") // the refused request itself is logged by the browser
	shot(t, ctx, dir, "admin-wrong-key.png")

	// The right key: strategy, models, upstream host; the key stays hidden.
	do(t, ctx, chromedp.SendKeys(chromedp.ID("key"), testKey), chromedp.Click(chromedp.ID("open")))
	within(t, ctx, 5*time.Second, "signed in", `document.getElementById("conn").textContent === "live"`)
	if got := eval[string](t, ctx, `document.getElementById("strategy").textContent`); got != "web_session" {
		t.Errorf("strategy %q", got)
	}
	if got := eval[string](t, ctx, `document.querySelector("#models tbody").textContent`); !strings.Contains(got, testModel) || !strings.Contains(got, "GPT_55") {
		t.Errorf("models %q", got)
	}
	if got := eval[string](t, ctx, `document.getElementById("upstream-host").textContent`); got != testSubdomain+".postman.co" {
		t.Errorf("upstream host %q", got)
	}
	if got := eval[string](t, ctx, `document.getElementById("health").textContent`); got != "facade healthy · upstream not verified by /health" {
		t.Errorf("health %q", got)
	}
	page := eval[string](t, ctx, `document.documentElement.outerHTML`)
	if strings.Contains(page, testKey) {
		t.Error("the key is in the page before it was revealed")
	}
	for _, secret := range []string{testCookie, testToken} {
		if strings.Contains(page, secret) {
			t.Error("an upstream secret is in the page")
		}
	}

	// A chat request sent through the API appears in the recent list within 2 s.
	resp := s.post(t, userBody("hello from the browser test", false, ""), "x-request-id", "browser-test-0001")
	_, _ = io.Copy(io.Discard, resp.Body)
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("chat: %d", resp.StatusCode)
	}
	took := within(t, ctx, 2*time.Second, "request in the recent list",
		`[...document.querySelectorAll("#requests tbody tr")].some(tr => tr.textContent.includes("browser-test-0001") && tr.textContent.includes("/v1/chat/completions") && tr.textContent.includes("`+testModel+`"))`)
	t.Logf("the request appeared after %s", took)
	if strings.Contains(eval[string](t, ctx, `document.body.textContent`), "hello from the browser test") {
		t.Error("message content reached the page")
	}

	// A tool turn puts a group in PENDING on the diagram; its continuation
	// moves it to CONSUMED through C01 and C14.
	_, cont, _ := pending(t, s, "weather please")
	within(t, ctx, 2*time.Second, "PENDING on the diagram", `document.querySelector('#machine [data-state="PENDING"]').dataset.count === "1"`)
	shot(t, ctx, dir, "admin-pending.png")
	if status, _, _ := turnResult(t, s, chatBody(t, testModel, cont, toolsJSON, "")); status != 200 {
		t.Fatalf("continuation: %d", status)
	}
	within(t, ctx, 2*time.Second, "CONSUMED on the diagram",
		`document.querySelector('#machine [data-state="CONSUMED"]').dataset.count === "1" && document.querySelector('#machine [data-state="PENDING"]').dataset.count === "0"`)
	for _, edge := range [][2]string{{"PENDING", "INFLIGHT"}, {"INFLIGHT", "CONSUMED"}} {
		js := fmt.Sprintf(`document.querySelector('#machine .edge[data-from="%s"][data-to="%s"]').classList.contains("recent")`, edge[0], edge[1])
		if !eval[bool](t, ctx, js) {
			t.Errorf("edge %s→%s is not drawn as a recent transition", edge[0], edge[1])
		}
	}
	if got := eval[string](t, ctx, `document.querySelector("#transitions tbody").textContent`); !strings.Contains(got, "C01") || !strings.Contains(got, "C14") {
		t.Errorf("transitions %q", got)
	}

	// Keyboard: Tab reaches the reveal button, Enter reveals the key.
	do(t, ctx, chromedp.Evaluate[chromedp.Void](`document.activeElement && document.activeElement.blur(); window.scrollTo(0, 0)`))
	reached := false
	for i := 0; i < 40 && !reached; i++ {
		do(t, ctx, chromedp.KeyEvent(kb.Tab))
		reached = eval[string](t, ctx, `document.activeElement ? document.activeElement.id : ""`) == "key-reveal"
	}
	if !reached {
		t.Fatal("the reveal button cannot be reached with Tab")
	}
	do(t, ctx, chromedp.KeyEvent(kb.Enter))
	within(t, ctx, time.Second, "key revealed", `document.getElementById("key-value").textContent === "`+testKey+`"`)
	if !strings.Contains(eval[string](t, ctx, `document.querySelector('#snippets pre[data-snippet="curl"]').textContent`), testKey) {
		t.Error("the revealed key is not in the curl snippet")
	}
	for _, name := range []string{"curl", "openai (npm)", "openai-go", "Claude Code", "9router", "Claude Code via 9router", "opencode", "Codex CLI"} {
		js := fmt.Sprintf(`(document.querySelector('#snippets pre[data-snippet="%s"]') || {}).textContent || ""`, name)
		text := eval[string](t, ctx, js)
		base := s.base + "/v1"
		if name == "Claude Code" { // the origin, without /v1
			base = "ANTHROPIC_BASE_URL=" + s.base + " "
		}
		if !strings.Contains(text, testModel) || (name != "Claude Code via 9router" && !strings.Contains(text, base)) {
			t.Errorf("snippet %s lacks the model or the base URL: %q", name, text)
		}
	}
	do(t, ctx, chromedp.Click(chromedp.ID("key-reveal")))
	within(t, ctx, time.Second, "key hidden again", `!document.documentElement.outerHTML.includes("`+testKey+`")`)
	noErrors(t, ctx, bl, "signed in")
	shot(t, ctx, dir, "admin-full.png")
	do(t, ctx, chromedp.Evaluate[chromedp.Void](`window.scrollTo(0, 0)`))
	view, err := chromedp.Run(ctx, chromedp.CaptureScreenshot())
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "admin-1280x800.png"), view, 0o644); err != nil {
		t.Fatal(err)
	}

	// A narrow window: no horizontal scrolling of the page itself.
	do(t, ctx, chromedp.EmulateViewport(390, 844))
	within(t, ctx, 2*time.Second, "narrow layout", `document.documentElement.scrollWidth <= window.innerWidth`)
	shot(t, ctx, dir, "admin-narrow.png")
	do(t, ctx, chromedp.EmulateViewport(1280, 800))

	// The gateway goes away: the page says so.
	s.cancel()
	within(t, ctx, 5*time.Second, "disconnected", `document.getElementById("conn").textContent.startsWith("disconnected")`)
	shot(t, ctx, dir, "admin-disconnected.png")
	noErrors(t, ctx, bl, "disconnected", "ERR_CONNECTION_REFUSED", "Failed to fetch", "Failed to load resource")

	// The detectors work: an inline style is refused by the policy and seen.
	do(t, ctx, chromedp.Evaluate[chromedp.Void](`document.body.setAttribute("style", "color: red")`))
	within(t, ctx, 2*time.Second, "CSP probe", `window.__csp.length > 0`)
	bl.take()
}

// The page against `gateway demo`, as its owner first sees it; its 1280×800
// screenshot is the one in docs/.
func TestTheAdminPageAgainstTheDemo(t *testing.T) {
	ctx, bl := newBrowser(t)
	dir := screenshotDir(t)
	base, key := startDemo(t, "web_session")
	origin := strings.TrimSuffix(base, "/v1")
	do(t, ctx, chromedp.EmulateViewport(1280, 800), chromedp.Navigate(origin+"/admin"), chromedp.WaitVisible(chromedp.ID("key")),
		chromedp.SendKeys(chromedp.ID("key"), key), chromedp.Click(chromedp.ID("open")))
	within(t, ctx, 5*time.Second, "signed in", `document.getElementById("conn").textContent === "live"`)
	for id, want := range map[string]string{"strategy": "web_session", "upstream-host": demoSubdomain + ".postman.co", "version": "version " + version} {
		if got := eval[string](t, ctx, `document.getElementById("`+id+`").textContent`); got != want {
			t.Errorf("%s: %q, want %q", id, got, want)
		}
	}
	if got := eval[string](t, ctx, `document.querySelector("#models tbody").textContent`); got != demoModel+demoEnum+demoEnum {
		t.Errorf("models %q", got)
	}
	client := &http.Client{Timeout: 10 * time.Second}
	send := func(body string) []byte {
		req, _ := http.NewRequestWithContext(t.Context(), "POST", base+"/chat/completions", strings.NewReader(body))
		req.Header.Set("Authorization", "Bearer "+key)
		req.Header.Set("Content-Type", "application/json")
		resp, err := client.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return b
	}
	send(`{"model":"` + demoModel + `","messages":[{"role":"user","content":"Hello!"}]}`)
	send(`{"model":"` + demoModel + `","stream":true,"messages":[{"role":"user","content":"Hello! #scenario=truncated_frame"}]}`)
	history := []msg{{"role": "user", "content": "weather and time?"}}
	var c completion
	if err := json.Unmarshal(send(chatBody(t, demoModel, history, toolsJSON, "")), &c); err != nil || len(c.Choices) == 0 {
		t.Fatalf("tool turn: %v", err)
	}
	within(t, ctx, 2*time.Second, "three requests listed", `document.querySelectorAll("#requests tbody tr").length === 3`)
	within(t, ctx, 2*time.Second, "the tool group on the diagram", `document.querySelector('#machine [data-state="PENDING"]').dataset.count === "1"`)
	send(chatBody(t, demoModel, append(history, assistantAndResults(c, sunny)...), toolsJSON, ""))
	within(t, ctx, 2*time.Second, "the continuation on the diagram", `document.querySelector('#machine [data-state="CONSUMED"]').dataset.count === "1"`)
	if got := eval[string](t, ctx, `document.querySelector("#requests tbody").textContent`); !strings.Contains(got, "upstream_incomplete_stream") {
		t.Errorf("the failed stream's code is not listed: %q", got)
	}
	// A stream that failed after its 200 counts among the last hour's errors.
	within(t, ctx, 2*time.Second, "the failed stream among the last hour's errors",
		`(document.querySelector('#last-hour tr[data-cause="upstream_incomplete_stream"] td.num') || {}).textContent === "1"`)
	// The demo's emulator reports its plan in every stream: the first screen
	// shows it as reported, with its time, and what it is not.
	within(t, ctx, 2*time.Second, "the demo's credit report",
		`document.getElementById("credits-label").textContent.startsWith("as reported by the service at ") &&
		 document.getElementById("credits-label").textContent.endsWith("(web_session)") &&
		 document.getElementById("credits-state").textContent === "AVAILABLE" &&
		 document.getElementById("credits-used").textContent.includes(" of limit 50000, in the service's unit)") &&
		 document.getElementById("credits-warning").textContent === "warning threshold 50 % of the plan's limit crossed, as reported" &&
		 document.getElementById("credits-not").textContent.startsWith("Not the credits left now")`)
	noErrors(t, ctx, bl, "demo")
	view, err := chromedp.Run(ctx, chromedp.CaptureScreenshot())
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "admin-demo-1280x800.png"), view, 0o644); err != nil {
		t.Fatal(err)
	}
	shot(t, ctx, dir, "admin-demo-full.png")
}
