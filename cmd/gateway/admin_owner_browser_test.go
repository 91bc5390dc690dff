package main

import (
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	"github.com/chromedp/chromedp/kb"
)

// TestTheAdminPageShowsTheOwnersFirstScreen: the control page's first screen shows
// what the owner needs — today's dispatches against each key's budget, the
// refusals of the last hour by cause, the recent requests filterable by key
// and outcome, all readable at 1280 px without horizontal scrolling — with the
// numbers of traffic this test generated; an inference key is refused.
func TestTheAdminPageShowsTheOwnersFirstScreen(t *testing.T) {
	ctx, bl := newBrowser(t)
	dir := screenshotDir(t)
	s, _, k := slotsServe(t, "web_session", nil, []string{"--id", "editor"}, []string{"--id", "router", "--models", testModel},
		[]string{"--id", "agent", "--per-day", "3", "--rpm", "60"}, []string{"--id", "owner", "--scope", "admin"})
	editor, agent, owner := k["editor"], k["agent"], k["owner"]
	send := func(key, text string) int {
		resp := s.post(t, userBody(text, false, ""), bearer(key)...)
		_, _ = io.Copy(io.Discard, resp.Body)
		return resp.StatusCode
	}
	// The agent: three dispatches (its whole day), two refusals; the editor
	// one success and one upstream failure.
	for i, want := range []int{200, 200, 200, 429, 429} {
		if got := send(agent, "agent turn"); got != want {
			t.Fatalf("agent request %d: %d, want %d", i, got, want)
		}
	}
	if got := send(editor, "editor turn"); got != 200 {
		t.Fatalf("editor: %d", got)
	}
	if got := send(editor, "#scenario=truncated_frame"); got != 502 {
		t.Fatalf("editor's failing turn: %d", got)
	}

	// An inference key cannot open the page: the API answers 403.
	admin := s.base + "/admin"
	do(t, ctx, chromedp.EmulateViewport(1280, 800), chromedp.Navigate(admin), chromedp.WaitVisible(chromedp.ID("key")),
		chromedp.SendKeys(chromedp.ID("key"), editor), chromedp.Click(chromedp.ID("open")))
	within(t, ctx, 5*time.Second, "inference key refused", `!document.getElementById("login-error").hidden`)
	if msg := eval[string](t, ctx, `document.getElementById("login-error").textContent`); !strings.Contains(msg, "insufficient_scope") {
		t.Errorf("inference key message %q", msg)
	}
	if eval[bool](t, ctx, `!document.getElementById("data").hidden || sessionStorage.length > 0`) {
		t.Error("an inference key showed data or was kept")
	}
	noErrors(t, ctx, bl, "inference key", "403")
	shot(t, ctx, dir, "admin-inference-key.png")

	// The admin key: the first screen.
	do(t, ctx, chromedp.SendKeys(chromedp.ID("key"), owner), chromedp.Click(chromedp.ID("open")))
	within(t, ctx, 5*time.Second, "signed in", `document.getElementById("conn").textContent === "live"`)
	if eval[bool](t, ctx, `document.getElementById("owner").hidden || !document.getElementById("internals").hidden`) {
		t.Fatal("the first screen is not the owner's view")
	}
	budget := func(slot string) string {
		return eval[string](t, ctx, `(document.querySelector('#budgets tr[data-slot="`+slot+`"] td.today') || {}).textContent || ""`)
	}
	within(t, ctx, 2*time.Second, "budgets shown", `document.querySelectorAll("#budgets tbody tr").length === 4`)
	for slot, want := range map[string]string{"agent": "3 / 3", "editor": "2", "owner": "0", "router": "0"} {
		if got := budget(slot); got != want {
			t.Errorf("today's dispatches of %s: %q, want %q", slot, got, want)
		}
	}
	if !eval[bool](t, ctx, `document.querySelector('#budgets tr[data-slot="agent"]').classList.contains("over")`) {
		t.Error("the agent's spent budget is not marked")
	}
	if got := eval[float64](t, ctx, `document.querySelector('#budgets tr[data-slot="agent"] meter').value`); got != 3 {
		t.Errorf("agent meter %v", got)
	}
	hour := func(cause string) string {
		return eval[string](t, ctx, `(document.querySelector('#last-hour tr[data-cause="`+cause+`"] td.num') || {}).textContent || ""`)
	}
	if got := hour("key_quota_exhausted"); got != "2" {
		t.Errorf("key_quota_exhausted in the last hour: %q", got)
	}
	if got := hour("upstream_incomplete_stream"); got != "1" {
		t.Errorf("upstream_incomplete_stream in the last hour: %q", got)
	}
	rows := func() int { return eval[int](t, ctx, `document.querySelectorAll("#requests tbody tr").length`) }
	if n := rows(); n != 7 {
		t.Errorf("recent requests: %d, want 7", n)
	}

	// The plan as the service reported it in the last stream: labelled as
	// reported and when, with its state, ratio, cycle end and the threshold
	// crossed, and what the numbers are not.
	plan := s.emu.Credits()
	within(t, ctx, 2*time.Second, "the credit report", `document.getElementById("credits-label").textContent.startsWith("as reported by the service at ")`)
	credit := func(id string) string { return eval[string](t, ctx, `document.getElementById("`+id+`").textContent`) }
	if got := credit("credits-label"); !strings.HasSuffix(got, "(web_session)") || !strings.Contains(got, " UTC on ") {
		t.Errorf("credit label %q", got)
	}
	if got := credit("credits-state"); got != "AVAILABLE" {
		t.Errorf("credit state %q", got)
	}
	wantUsed := fmt.Sprintf("%.1f %% (usage %d of limit 50000, in the service's unit)", float64(plan.Usage)/500, plan.Usage)
	if got := credit("credits-used"); strings.TrimSpace(got) != wantUsed {
		t.Errorf("credits used %q, want %q", got, wantUsed)
	}
	if got := eval[float64](t, ctx, `document.querySelector("#credits-used meter").value`); got != float64(plan.Usage)/50000 {
		t.Errorf("credits meter %v", got)
	}
	if got := credit("credits-cycle"); got != plan.CycleEnd.Format("2006-01-02 15:04 UTC") {
		t.Errorf("cycle end %q", got)
	}
	if got := credit("credits-plan"); got != "FREE_USER · pooled by the team · no overage" {
		t.Errorf("plan %q", got)
	}
	if got := credit("credits-warning"); got != "warning threshold 50 % of the plan's limit crossed, as reported" ||
		eval[bool](t, ctx, `document.getElementById("credits-warning").hidden`) {
		t.Errorf("threshold warning %q", got)
	}
	if got := credit("credits-not"); !strings.HasPrefix(got, "Not the credits left now") {
		t.Errorf("what the numbers are not: %q", got)
	}

	// Readable at 1280 px: neither the page nor the recent list scrolls sideways.
	if !eval[bool](t, ctx, `document.documentElement.scrollWidth <= window.innerWidth`) {
		t.Error("the page scrolls horizontally at 1280 px")
	}
	if !eval[bool](t, ctx, `(() => { const t = document.getElementById("requests"); return t.scrollWidth <= t.parentElement.clientWidth; })()`) {
		t.Error("the recent requests are wider than their card at 1280 px")
	}
	noErrors(t, ctx, bl, "first screen")
	do(t, ctx, chromedp.Evaluate[chromedp.Void](`window.scrollTo(0, 0)`))
	view, err := chromedp.Run(ctx, chromedp.CaptureScreenshot())
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "admin-owner-1280x800.png"), view, 0o644); err != nil {
		t.Fatal(err)
	}
	shot(t, ctx, dir, "admin-owner-full.png")

	// Filters, with the keyboard: the key slot, then the outcome.
	do(t, ctx, chromedp.Focus(chromedp.ID("filter-slot")))
	for i := 0; i < 5 && eval[string](t, ctx, `document.getElementById("filter-slot").value`) != "agent"; i++ {
		do(t, ctx, chromedp.KeyEvent(kb.ArrowDown))
	}
	if got := eval[string](t, ctx, `document.getElementById("filter-slot").value`); got != "agent" {
		t.Fatalf("the key filter cannot be set with the keyboard: %q", got)
	}
	within(t, ctx, 2*time.Second, "the agent's requests", `document.querySelectorAll("#requests tbody tr").length === 5`)
	do(t, ctx, chromedp.SetValue(chromedp.ID("filter-outcome"), "refused"),
		chromedp.Evaluate[chromedp.Void](`document.getElementById("filter-outcome").dispatchEvent(new Event("change"))`))
	within(t, ctx, 2*time.Second, "the agent's refusals", `document.querySelectorAll("#requests tbody tr").length === 2 && [...document.querySelectorAll("#requests tbody tr")].every(tr => tr.textContent.includes("key_quota_exhausted"))`)
	// The list stays filtered while it updates live.
	if got := send(editor, "after the filter"); got != 200 {
		t.Fatalf("editor: %d", got)
	}
	time.Sleep(1500 * time.Millisecond)
	if n := rows(); n != 2 {
		t.Errorf("the filter did not hold across a live update: %d rows", n)
	}
	shot(t, ctx, dir, "admin-owner-filtered.png")

	// A test moves the plan: the next stream's report shows at once.
	plan = s.emu.Credits()
	plan.Usage, plan.Thresholds = 46000, []int{50, 90}
	s.emu.SetCredits(plan)
	if got := send(editor, "the plan moved"); got != 200 {
		t.Fatalf("editor: %d", got)
	}
	within(t, ctx, 3*time.Second, "the moved plan", `document.getElementById("credits-warning").textContent.startsWith("warning thresholds 50 %, 90 %") && document.getElementById("credits-used").textContent.includes("usage 46100 of limit 50000")`)

	// The machines are in the internals view.
	do(t, ctx, chromedp.Click(chromedp.ID("view-internals")))
	within(t, ctx, time.Second, "internals", `!document.getElementById("internals").hidden && document.getElementById("owner").hidden && document.querySelector("#machine .state") !== null`)
	within(t, ctx, time.Second, "the conversation anchors on their machine",
		`document.querySelector('#conv-machine [data-state="ACTIVE"]').dataset.count !== "0"`)
	shot(t, ctx, dir, "admin-internals.png")
	page := eval[string](t, ctx, `document.documentElement.outerHTML`)
	for _, secret := range []string{owner, agent, editor, testCookie, testToken} {
		if strings.Contains(page, secret) {
			t.Error("a secret is in the page")
		}
	}
	noErrors(t, ctx, bl, "internals")
}
