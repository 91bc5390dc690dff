package main

import (
	"context"
	"encoding/csv"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/pmgate/pmgate/adapters/ops"
	"github.com/pmgate/pmgate/adapters/pgstore"
	"github.com/pmgate/pmgate/adapters/system"
	"github.com/pmgate/pmgate/app"
	"github.com/pmgate/pmgate/domain/correlation"
	"github.com/pmgate/pmgate/domain/errs"
	ledger "github.com/pmgate/pmgate/domain/usage"
)

const usageHelp = `usage: gateway usage [--since DAY] [--until DAY] [--json|--csv] [--url URL] [--env-file FILE]

What each API key spent: requests and upstream dispatches (the unit that
costs credits) by key slot, model and UTC day, with the characters sent and
received, the tokens the upstream reported and estimates from characters
(labelled "est."). The data is the usage ledger of docs/USAGE.md, read from
PostgreSQL when CORRELATION_STORE=postgres (every replica's), or from a
running gateway's GET /admin/api/usage with --url (the same data).

flags:
  --since DAY       first UTC day, YYYY-MM-DD (default: six days before --until)
  --until DAY       last UTC day, YYYY-MM-DD (default: today)
  --json            every ledger row as JSON (API, strategy and outcome included)
  --csv             the same rows as CSV with a header line
  --url URL         a running gateway (http://127.0.0.1:8788); its admin key is
                    read from the variable named by --key-env, never a flag
  --key-env NAME    the variable holding that admin key (default: PROVIDER_API_KEY)
  --env-file FILE   read KEY=VALUE lines first; the real environment wins

variables read: CORRELATION_STORE CORRELATION_POSTGRES_URL PROVIDER_API_KEY
`

// usageSource is where `gateway usage` and `gateway keys list` read the
// ledger: a running gateway (--url) or the shared PostgreSQL store.
type usageSource struct {
	url, key string
	pgURL    string
}

func (u usageSource) configured() bool { return u.url != "" || u.pgURL != "" }

func usageSourceFrom(getenv func(string) string, rawURL, keyEnv string) (usageSource, error) {
	if rawURL != "" {
		if keyEnv == "" {
			keyEnv = "PROVIDER_API_KEY"
		}
		key := getenv(keyEnv)
		if key == "" {
			return usageSource{}, fmt.Errorf("%w: --url needs an admin key in %s", errUsage, keyEnv)
		}
		pu, err := url.Parse(rawURL)
		if err != nil || (pu.Scheme != "http" && pu.Scheme != "https") || pu.Host == "" {
			return usageSource{}, fmt.Errorf("%w: --url must be an http(s) URL of a running gateway", errUsage)
		}
		base := strings.TrimSuffix(strings.TrimSuffix(pu.Scheme+"://"+pu.Host+pu.Path, "/"), "/v1")
		return usageSource{url: base, key: key}, nil
	}
	if getenv("CORRELATION_STORE") == "postgres" {
		u := getenv("CORRELATION_POSTGRES_URL")
		if u == "" {
			return usageSource{}, invalid("CORRELATION_POSTGRES_URL", "is required with CORRELATION_STORE=postgres")
		}
		return usageSource{pgURL: u}, nil
	}
	return usageSource{}, nil
}

// report reads the ledger rows of [since, until] and every slot's budget.
func (u usageSource) report(ctx context.Context, since, until string) (ops.UsageReport, error) {
	if u.url != "" {
		return u.fetch(ctx, since, until)
	}
	pg, err := pgstore.Open(ctx, u.pgURL, correlation.Limits{}, correlation.Policy{}, nil)
	if err != nil {
		return ops.UsageReport{}, err
	}
	defer pg.Close()
	// Read as a running gateway's views read them (a past day's or month's
	// count is zero), by the same code.
	views := app.NewUsage(pg.Usage(), system.Clock{}, slog.New(slog.DiscardHandler), 0)
	rows, err := views.Report(ctx, since, until)
	if err != nil {
		return ops.UsageReport{}, err
	}
	bs, err := views.Budgets(ctx)
	if err != nil {
		return ops.UsageReport{}, err
	}
	rep := ops.UsageReport{Since: since, Until: until, Rows: make([]ops.UsageRow, 0, len(rows))}
	for _, r := range rows {
		rep.Rows = append(rep.Rows, ops.UsageRowOf(r))
	}
	for slot, b := range bs {
		rep.Keys = append(rep.Keys, ops.KeyBudget{Slot: slot, DispatchesToday: b.DayDispatches, DispatchesMonth: b.MonthDispatches})
	}
	return rep, nil
}

// maxUsageBody bounds the answer of a running gateway.
const maxUsageBody = 64 << 20

func (u usageSource) fetch(ctx context.Context, since, until string) (ops.UsageReport, error) {
	ctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	q := url.Values{"since": {since}, "until": {until}}
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u.url+"/admin/api/usage?"+q.Encode(), nil)
	if err != nil {
		return ops.UsageReport{}, fmt.Errorf("%w: --url: %v", errUsage, err)
	}
	req.Header.Set("Authorization", "Bearer "+u.key)
	resp, err := (&http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}).Do(req)
	if err != nil {
		return ops.UsageReport{}, fmt.Errorf("the gateway at --url could not be reached: %w", withoutURL(err))
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(io.LimitReader(resp.Body, maxUsageBody))
	if err != nil {
		return ops.UsageReport{}, fmt.Errorf("reading the gateway's answer: %w", err)
	}
	if resp.StatusCode != http.StatusOK {
		var e struct {
			Error struct{ Code, Message string }
		}
		_ = json.Unmarshal(body, &e)
		return ops.UsageReport{}, fmt.Errorf("the gateway answered %d %s: %s", resp.StatusCode, e.Error.Code, e.Error.Message)
	}
	var rep ops.UsageReport
	if err := json.Unmarshal(body, &rep); err != nil {
		return ops.UsageReport{}, fmt.Errorf("the gateway's answer is not a usage report")
	}
	return rep, nil
}

// withoutURL keeps a transport error's cause without the URL it quotes.
func withoutURL(err error) error {
	if ue, ok := err.(*url.Error); ok {
		return ue.Err
	}
	return err
}

func runUsage(ctx context.Context, args []string, getenv func(string) string, stdout io.Writer) error {
	fs := flag.NewFlagSet("usage", flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	now := time.Now().UTC()
	until := fs.String("until", ledger.Day(now), "last UTC day")
	since := fs.String("since", "", "first UTC day")
	asJSON := fs.Bool("json", false, "JSON rows")
	asCSV := fs.Bool("csv", false, "CSV rows")
	rawURL := fs.String("url", "", "a running gateway")
	keyEnv := fs.String("key-env", "PROVIDER_API_KEY", "the variable holding the admin key")
	envPath := fs.String("env-file", "", "read KEY=VALUE lines first")
	if done, err := parseFlags(fs, args, usageHelp, stdout); done {
		return err
	}
	if fs.NArg() != 0 {
		return fmt.Errorf("%w: usage takes no arguments (see --help)", errUsage)
	}
	if *asJSON && *asCSV {
		return fmt.Errorf("%w: --json and --csv exclude each other", errUsage)
	}
	u, err := time.Parse(time.DateOnly, *until)
	if err != nil {
		return fmt.Errorf("%w: --until must be a day, YYYY-MM-DD", errUsage)
	}
	if *since == "" {
		*since = ledger.Day(u.AddDate(0, 0, -6))
	}
	s, err := time.Parse(time.DateOnly, *since)
	if err != nil || u.Before(s) {
		return fmt.Errorf("%w: --since must be a day, YYYY-MM-DD, not after --until", errUsage)
	}
	if *envPath != "" {
		if getenv, err = envFile(*envPath, getenv); err != nil {
			return err
		}
	}
	src, err := usageSourceFrom(getenv, *rawURL, *keyEnv)
	if err != nil {
		return err
	}
	if !src.configured() {
		return fmt.Errorf("%w: no shared ledger: set CORRELATION_STORE=postgres (and its URL), or pass --url of the running gateway", errUsage)
	}
	rep, err := src.report(ctx, *since, *until)
	if err != nil {
		return err
	}
	switch {
	case *asJSON:
		enc := json.NewEncoder(stdout)
		enc.SetIndent("", "  ")
		return enc.Encode(rep)
	case *asCSV:
		return writeUsageCSV(stdout, rep.Rows)
	}
	return writeUsageTable(stdout, rep)
}

var usageCSVHeader = []string{"day", "slot", "api", "model", "strategy", "outcome", "requests", "dispatches", "query_chars",
	"output_chars", "reported_requests", "reported_prompt_tokens", "reported_completion_tokens", "estimated_input_tokens",
	"estimated_output_tokens", "duration_ms"}

func writeUsageCSV(w io.Writer, rows []ops.UsageRow) error {
	cw := csv.NewWriter(w)
	_ = cw.Write(usageCSVHeader)
	i := strconv.FormatInt
	for _, r := range rows {
		_ = cw.Write([]string{r.Day, r.Slot, r.API, r.Model, r.Strategy, r.Outcome, i(r.Requests, 10), i(r.Dispatches, 10),
			i(r.QueryChars, 10), i(r.OutputChars, 10), i(r.ReportedRequests, 10), i(r.ReportedPromptTokens, 10),
			i(r.ReportedCompletionTokens, 10), i(r.EstimatedInputTokens, 10), i(r.EstimatedOutputTokens, 10), i(r.DurationMS, 10)})
	}
	cw.Flush()
	return cw.Error()
}

// writeUsageTable prints one line per day, key slot and model (APIs,
// strategies and outcomes summed; refusals and errors counted apart), then
// each slot's total over the range.
func writeUsageTable(w io.Writer, rep ops.UsageReport) error {
	type key struct{ day, slot, model string }
	type sum struct {
		requests, dispatches, refused, failed, qchars, ochars, repIn, repOut, estIn, estOut int64
	}
	var order []key
	lines := map[key]*sum{}
	totals := map[string]*sum{}
	var slots []string
	add := func(s *sum, r ops.UsageRow) {
		s.requests += r.Requests
		s.dispatches += r.Dispatches
		switch {
		case r.Outcome == "ok":
		case r.Outcome == string(errs.KeyRateLimited) || r.Outcome == string(errs.KeyQuotaExhausted) ||
			r.Outcome == string(errs.ConcurrencyLimitExceeded):
			s.refused += r.Requests
		default:
			s.failed += r.Requests
		}
		s.qchars += r.QueryChars
		s.ochars += r.OutputChars
		s.repIn += r.ReportedPromptTokens
		s.repOut += r.ReportedCompletionTokens
		s.estIn += r.EstimatedInputTokens
		s.estOut += r.EstimatedOutputTokens
	}
	for _, r := range rep.Rows {
		model := r.Model
		if model == "" {
			model = "(none)"
		}
		k := key{r.Day, r.Slot, model}
		if lines[k] == nil {
			lines[k] = &sum{}
			order = append(order, k)
		}
		add(lines[k], r)
		if totals[r.Slot] == nil {
			totals[r.Slot] = &sum{}
			slots = append(slots, r.Slot)
		}
		add(totals[r.Slot], r)
	}
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintf(w, "usage %s … %s (UTC days)\n\n", rep.Since, rep.Until)
	fmt.Fprintln(tw, "DAY\tKEY\tMODEL\tREQUESTS\tDISPATCHES\tREFUSED\tFAILED\tCHARS SENT\tCHARS RECEIVED\tTOKENS (reported in/out)\tTOKENS (est. in/out)\t")
	line := func(day, slot, model string, s *sum) {
		fmt.Fprintf(tw, "%s\t%s\t%s\t%d\t%d\t%d\t%d\t%d\t%d\t%d/%d\t%d/%d\t\n", day, slot, model, s.requests, s.dispatches,
			s.refused, s.failed, s.qchars, s.ochars, s.repIn, s.repOut, s.estIn, s.estOut)
	}
	for _, k := range order {
		line(k.day, k.slot, k.model, lines[k])
	}
	for _, slot := range slots {
		line("total", slot, "", totals[slot])
	}
	if len(order) == 0 {
		fmt.Fprintln(tw, "(no requests in this range)\t\t\t\t\t\t\t\t\t\t\t")
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	writeCredits(w, rep.UpstreamCredits)
	return nil
}

// writeCredits prints the Postman plan as the service last reported it to
// the gateway that answered: labelled as reported and when, never as credits
// left now. Read from PostgreSQL there is none: the report is kept per
// process.
func writeCredits(w io.Writer, c *ops.UpstreamCredits) {
	fmt.Fprintln(w)
	switch {
	case c == nil:
		fmt.Fprintln(w, "Postman credits: not in the shared ledger (each gateway process keeps the service's last report; read it with --url)")
		return
	case !c.Known:
		fmt.Fprintf(w, "Postman credits (%s): %s\n", c.Strategy, c.Label)
		return
	}
	fmt.Fprintf(w, "Postman credits (%s), %s:\n", c.Strategy, c.Label)
	state := c.State
	if state == "" {
		state = "(no state)"
	}
	fmt.Fprintf(w, "  state %s", state)
	if c.UserType != "" {
		fmt.Fprintf(w, ", plan %s", c.UserType)
	}
	if c.UsedRatio != nil {
		fmt.Fprintf(w, ", %.1f%% of the plan's limit used (usage %d of limit %d, in the service's unit)", *c.UsedRatio*100, *c.Usage, *c.Limit)
	}
	fmt.Fprintln(w)
	if c.CycleEnd != nil {
		fmt.Fprintf(w, "  the cycle ends %s\n", c.CycleEnd.Format("2006-01-02 15:04 UTC"))
	}
	for _, t := range c.Crossed {
		fmt.Fprintf(w, "  warning threshold %d%% crossed\n", t.Value)
	}
	fmt.Fprintf(w, "  %s\n", c.NotNow)
}
