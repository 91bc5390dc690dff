package main

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/signal"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/pmgate/pmgate/adapters/httpapi"
	"github.com/pmgate/pmgate/adapters/keyfile"
	"github.com/pmgate/pmgate/adapters/ops"
	"github.com/pmgate/pmgate/domain/errs"
	"github.com/pmgate/pmgate/domain/keyring"
	ledger "github.com/pmgate/pmgate/domain/usage"
)

// keysPollInterval is how often serve reads the key file to look for a
// change: a revocation is in force within it (at once on SIGHUP).
const keysPollInterval = 500 * time.Millisecond

// apiKeys is the ingress's keyring: the key file's slots, or the one slot
// "default" of PROVIDER_API_KEY.
func apiKeys(cfg config) *httpapi.Keyring {
	if cfg.keysFile == "" {
		return httpapi.StaticKeyring(cfg.principalKey, map[string]string{"default": cfg.apiKey})
	}
	return httpapi.NewKeyring(cfg.principalKey, cfg.keys.Slots)
}

// keyWatcher is the one owner of what the key file gave keys: the poll, SIGHUP
// and a request with an unknown key all load the file through it. A file that
// fails validation keeps the previous set except for its revocations; the log
// says why (never a key).
func keyWatcher(cfg config, keys *httpapi.Keyring, log *slog.Logger) *keyfile.Watcher {
	return keyfile.NewWatcher(cfg.keysFile, cfg.request.models, cfg.keysSum,
		func(r keyring.Ring, cause keyfile.Cause) {
			keys.Replace(r.Slots)
			ids := make([]string, len(r.Slots))
			for i, s := range r.Slots {
				ids[i] = s.ID
			}
			log.Info("key file reloaded", "cause", string(cause), "slots", len(r.Slots), "slot_ids", ids)
		},
		func(err error, kept func(string, [32]byte) bool, cause keyfile.Cause) {
			revoked := 0
			if kept != nil {
				revoked = keys.Retain(kept) // a revocation takes effect even in a refused file
			}
			log.Warn("key file refused; the previous keys stay in force", "cause", string(cause), "code", string(errs.CodeOf(err)),
				"reason", err.Error(), "slots_in_force", keys.Len(), "slots_revoked", revoked)
		})
}

// watchKeys runs w on the poll and on SIGHUP (hup, from notifyHUP) until ctx
// ends.
func watchKeys(ctx context.Context, w *keyfile.Watcher, hup chan os.Signal) {
	defer signal.Stop(hup)
	trigger := make(chan struct{})
	go func() {
		for {
			select {
			case <-ctx.Done():
				return
			case <-hup:
				select {
				case trigger <- struct{}{}:
				case <-ctx.Done():
					return
				}
			}
		}
	}()
	w.Run(ctx, keysPollInterval, trigger)
}

const keysUsage = `usage: gateway keys <new|set|list|revoke> [flags]

  keys new [--id ID] [--models a,b] [--max-concurrent N] [--note TEXT]
           [--scope inference|admin] [--rpm N] [--per-day N] [--per-month N]
      generate a key, print it once, store only its SHA-256 as a new slot
  keys set ID [--scope inference|admin] [--rpm N] [--per-day N] [--per-month N]
      change a slot's scope or limits (0: unlimited); the key stays the same
  keys list [--url URL] [--key-env NAME]
      the slots: id, scope, created, models, limits, today's and this month's
      dispatches (from PostgreSQL when CORRELATION_STORE=postgres, or from the
      running gateway at --url with the admin key of the variable --key-env
      names, default PROVIDER_API_KEY), note (never a key)
  keys revoke ID
      remove the slot; a running serve refuses its key on the next request

Flags may come before or after the slot id (keys revoke ID --file FILE).

flags of every subcommand:
  --file FILE       the key file (default: PROVIDER_KEYS_FILE)
  --env-file FILE   read KEY=VALUE lines first (PROVIDER_KEYS_FILE, PROVIDER_MODELS)

Edits are atomic (temporary file, fsync, rename) and refused while another
edit runs or when the file changed during the edit. A running serve reloads
the file within half a second, at once on SIGHUP, and a request with a key it
does not know checks the file first, so a new key works at once.
`

// runKeys manages PROVIDER_KEYS_FILE.
func runKeys(args []string, getenv func(string) string, stdout, stderr io.Writer) error {
	if len(args) == 0 || args[0] == "help" || args[0] == "-h" || args[0] == "--help" {
		fmt.Fprint(stdout, keysUsage)
		if len(args) == 0 {
			return errUsage
		}
		return nil
	}
	sub, args := args[0], args[1:]
	if !slices.Contains([]string{"new", "set", "list", "revoke"}, sub) {
		fmt.Fprint(stderr, keysUsage)
		if meant := keysSubcommandMeant(sub); meant != "" {
			return fmt.Errorf("%w: unknown keys subcommand %q; did you mean %q?", errUsage, sub, meant)
		}
		return fmt.Errorf("%w: unknown keys subcommand %q", errUsage, sub)
	}
	fs := flag.NewFlagSet("keys "+sub, flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	file := fs.String("file", "", "the key file (default: PROVIDER_KEYS_FILE)")
	envPath := fs.String("env-file", "", "read KEY=VALUE lines first; the real environment wins")
	var id, models, note *string
	var maxConc *int
	if sub == "new" {
		id = fs.String("id", "", "slot id (default: a random one)")
		models = fs.String("models", "", "comma list of the public models the key may use (default: all)")
		maxConc = fs.Int("max-concurrent", 0, "the slot's own concurrency limit (0: only the global one)")
		note = fs.String("note", "", "a note for the list")
	}
	var lim *limitFlags
	if sub == "new" || sub == "set" {
		lim = addLimitFlags(fs)
	}
	var listURL, keyEnv *string
	if sub == "list" {
		listURL = fs.String("url", "", "a running gateway to read the dispatch counts from")
		keyEnv = fs.String("key-env", "PROVIDER_API_KEY", "the variable holding the admin key of --url")
	}
	// keys revoke ID --file F: flags may follow the slot id.
	if done, err := parseFlags(fs, flagsFirst(fs, args), keysUsage, stdout); done {
		return err
	}
	if err := checkMaxConcurrentFlag(fs); err != nil {
		return err
	}
	if *envPath != "" {
		var err error
		if getenv, err = envFile(*envPath, getenv); err != nil {
			return err
		}
	}
	path := *file
	if path == "" {
		path = getenv("PROVIDER_KEYS_FILE")
	}
	if path == "" {
		return fmt.Errorf("%w: no key file: pass --file or set PROVIDER_KEYS_FILE", errUsage)
	}
	var configured []string // nil: the allowlist is checked when serve loads the file
	if getenv(envModels) != "" {
		var err error
		if configured, err = parseModels(getenv); err != nil {
			return err
		}
	}
	switch sub {
	case "new":
		if fs.NArg() != 0 {
			return fmt.Errorf("%w: keys new takes no arguments", errUsage)
		}
		if *models != "" && configured == nil {
			// serve refuses a whole file whose allowlist names a model it does
			// not serve, and then applies no later edit either: never write one.
			return fmt.Errorf("%w: --models needs PROVIDER_MODELS (or --env-file) to check the allowlist against what serve serves", errUsage)
		}
		return keysNew(path, configured, *id, *models, *maxConc, *note, lim, stdout)
	case "set":
		if fs.NArg() != 1 {
			return fmt.Errorf("%w: keys set takes one slot id", errUsage)
		}
		return keysSet(path, configured, fs.Arg(0), lim, stdout)
	case "list":
		if fs.NArg() != 0 {
			return fmt.Errorf("%w: keys list takes no arguments", errUsage)
		}
		src, err := usageSourceFrom(getenv, *listURL, *keyEnv)
		if err != nil {
			return err
		}
		return keysList(path, src, stdout)
	case "revoke":
		if fs.NArg() != 1 {
			return fmt.Errorf("%w: keys revoke takes one slot id", errUsage)
		}
		return keysRevoke(path, configured, fs.Arg(0), stdout)
	}
	return nil // not reached: sub was checked above
}

// keysSubcommandMeant is the keys subcommand an unknown one stands for: a
// common synonym (rm for revoke, add for new, ls for list) or a near spelling.
func keysSubcommandMeant(sub string) string {
	switch strings.ToLower(sub) {
	case "rm", "remove", "delete", "del", "disable", "deactivate":
		return "revoke"
	case "add", "create", "generate", "gen", "issue":
		return "new"
	case "ls", "show", "status":
		return "list"
	case "update", "edit", "change", "modify":
		return "set"
	}
	return nearest(sub, []string{"new", "set", "list", "revoke"})
}

// flagsFirst moves the positional arguments of args after its flags, so that
// flag.Parse (which stops at the first non-flag) reads flags written after a
// slot id too. A flag's value (the word after a non-boolean flag without
// "=") stays with its flag; everything after "--" stays positional.
func flagsFirst(fs *flag.FlagSet, args []string) []string {
	var flags, pos []string
	for i := 0; i < len(args); i++ {
		a := args[i]
		switch {
		case a == "--":
			pos = append(pos, args[i:]...)
			i = len(args)
		case strings.HasPrefix(a, "-") && a != "-":
			flags = append(flags, a)
			name := strings.TrimLeft(a, "-")
			if strings.Contains(name, "=") {
				continue
			}
			if f := fs.Lookup(name); f != nil && !isBoolFlag(f) && i+1 < len(args) {
				i++
				flags = append(flags, args[i])
			}
		default:
			pos = append(pos, a)
		}
	}
	return append(flags, pos...)
}

func isBoolFlag(f *flag.Flag) bool {
	b, ok := f.Value.(interface{ IsBoolFlag() bool })
	return ok && b.IsBoolFlag()
}

// newKey returns a fresh API key: "pmg-" and base64url of 32 CSPRNG bytes.
func newKey() string {
	b := make([]byte, 32)
	if _, err := rand.Read(b); err != nil {
		panic(err) // crypto/rand does not fail on supported platforms
	}
	return "pmg-" + base64.RawURLEncoding.EncodeToString(b)
}

func keysNew(path string, configured []string, id, models string, maxConc int, note string, lim *limitFlags, stdout io.Writer) error {
	if id == "" {
		id = "key-" + randomHex(4)
	}
	if !keyring.ValidID(id) {
		return fmt.Errorf("%w: --id must match [a-z0-9][a-z0-9_-]{0,63}", errUsage)
	}
	var allow []string
	if models != "" {
		for _, m := range strings.Split(models, ",") {
			allow = append(allow, strings.TrimSpace(m))
		}
	}
	// The file's directory is created (private to the owner) on first use.
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		return fmt.Errorf("%w: keys new: cannot create the key file's directory: %v", errUsage, errors.Unwrap(err))
	}
	key := newKey()
	s := keyring.Slot{ID: id, Digest: sha256.Sum256([]byte(key)), Models: allow, MaxConcurrent: maxConc, Note: note,
		Created: time.Now().UTC().Truncate(time.Second)}
	if err := lim.apply(&s); err != nil {
		return err
	}
	err := keyfile.Edit(path, configured, true, func(r keyring.Ring) (keyring.Ring, error) {
		if r.Find(id) >= 0 {
			return r, fmt.Errorf("%w: a slot with the id %s exists (revoke it first, or choose another --id)", errUsage, id)
		}
		return r.Add(s, configured)
	})
	if err != nil {
		return err
	}
	fmt.Fprintf(stdout, "slot  %s\nkey   %s\n\nThe key is shown once and stored only as its SHA-256: copy it now.\n", id, key)
	return nil
}

func keysList(path string, src usageSource, stdout io.Writer) error {
	r, _, err := keyfile.Load(path, nil)
	if err != nil {
		return err
	}
	spent := map[string]ops.KeyBudget{}
	countsNote := ""
	counted := src.configured()
	if counted {
		now := time.Now().UTC()
		rep, err := src.report(context.Background(), ledger.Day(now), ledger.Day(now))
		if err != nil {
			// The slots are still worth listing; say why the counts are missing.
			counted, countsNote = false, "\n(dispatch counts unavailable: "+describe(err)+")\n"
		}
		for _, k := range rep.Keys {
			spent[k.Slot] = k
		}
	} else {
		countsNote = "\n(dispatch counts: set CORRELATION_STORE=postgres, or pass --url of the running gateway)\n"
	}
	tw := tabwriter.NewWriter(stdout, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "ID\tSCOPE\tCREATED\tMODELS\tMAX_CONCURRENT\tRPM\tTODAY\tMONTH\tNOTE")
	for _, s := range r.Slots {
		ms, mc := "all", "-"
		if len(s.Models) > 0 {
			ms = strings.Join(s.Models, ",")
		}
		if s.MaxConcurrent > 0 {
			mc = strconv.Itoa(s.MaxConcurrent)
		}
		k := spent[s.ID] // a slot without a budget row has dispatched nothing yet
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\n", s.ID, s.Scope, s.Created.Format(time.RFC3339), ms, mc,
			limitText(s.Limits.RequestsPerMinute), spentText(counted, k.DispatchesToday, s.Limits.DispatchesPerDay),
			spentText(counted, k.DispatchesMonth, s.Limits.DispatchesPerMonth), s.Note)
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	fmt.Fprint(stdout, countsNote)
	return nil
}

// limitText is a limit for the list: "-" when unlimited.
func limitText(n int) string {
	if n == 0 {
		return "-"
	}
	return strconv.Itoa(n)
}

// spentText is "dispatches/limit" ("dispatches/-" when unlimited; "?" for the
// count when no ledger could be read).
func spentText(known bool, n, limit int) string {
	c := "?"
	if known {
		c = strconv.Itoa(n)
	}
	return c + "/" + limitText(limit)
}

// limitFlags are the scope and limit flags of keys new and keys set; only the
// flags given change a slot.
type limitFlags struct {
	fs                    *flag.FlagSet
	scope                 *string
	rpm, perDay, perMonth *int
}

func addLimitFlags(fs *flag.FlagSet) *limitFlags {
	return &limitFlags{fs: fs,
		scope:    fs.String("scope", "inference", "inference (the API) or admin (also /admin's data and /metrics)"),
		rpm:      fs.Int("rpm", 0, "requests per minute (a bucket with a one-minute burst); 0: unlimited"),
		perDay:   fs.Int("per-day", 0, "upstream dispatches per UTC day; 0: unlimited"),
		perMonth: fs.Int("per-month", 0, "upstream dispatches per calendar month (UTC); 0: unlimited"),
	}
}

// apply sets the given flags on s; the key file's rules (keyring.Parse)
// check the values.
func (l *limitFlags) apply(s *keyring.Slot) error {
	var err error
	l.fs.Visit(func(f *flag.Flag) {
		switch f.Name {
		case "scope":
			switch keyring.Scope(*l.scope) {
			case keyring.ScopeInference, keyring.ScopeAdmin:
				s.Scope = keyring.Scope(*l.scope)
			default:
				err = fmt.Errorf("%w: --scope must be inference or admin", errUsage)
			}
		case "rpm":
			s.Limits.RequestsPerMinute = *l.rpm
		case "per-day":
			s.Limits.DispatchesPerDay = *l.perDay
		case "per-month":
			s.Limits.DispatchesPerMonth = *l.perMonth
		}
	})
	return err
}

func keysSet(path string, configured []string, id string, lim *limitFlags, stdout io.Writer) error {
	var changed keyring.Slot
	err := keyfile.Edit(path, configured, false, func(r keyring.Ring) (keyring.Ring, error) {
		if r.Find(id) < 0 {
			return r, fmt.Errorf("%w: no slot has the id %s", errUsage, id)
		}
		var applyErr error
		next, err := r.Set(id, configured, func(s *keyring.Slot) { applyErr = lim.apply(s) })
		if applyErr != nil {
			return r, applyErr
		}
		if err == nil {
			changed = next.Slots[next.Find(id)]
		}
		return next, err
	})
	if err != nil {
		return err
	}
	fmt.Fprintf(stdout, "slot %s: scope %s, rpm %s, per day %s, per month %s\n", id, changed.Scope,
		limitText(changed.Limits.RequestsPerMinute), limitText(changed.Limits.DispatchesPerDay), limitText(changed.Limits.DispatchesPerMonth))
	return nil
}

// keysRevoke removes a slot. The file is read without the allowlist check, so
// that a revocation can always be written; when the rest of the file is one
// serve refuses, it says so (serve still applies the revocation).
func keysRevoke(path string, configured []string, id string, stdout io.Writer) error {
	var rest keyring.Ring
	err := keyfile.Edit(path, nil, false, func(r keyring.Ring) (keyring.Ring, error) {
		if r.Find(id) < 0 {
			return r, fmt.Errorf("%w: no slot has the id %s", errUsage, id)
		}
		var err error
		rest, err = r.Revoke(id)
		return rest, err
	})
	if err != nil {
		return err
	}
	fmt.Fprintf(stdout, "revoked %s\n", id)
	if configured != nil {
		if _, err := keyring.Parse(keyring.Marshal(rest), configured); err != nil {
			fmt.Fprintf(stdout, "warning: serve refuses the rest of the file (%s); it applies this revocation, but no other change until that is fixed\n", err.Error())
		}
	}
	return nil
}

// checkMaxConcurrentFlag enforces the documented range of an explicit
// --max-concurrent: 1–4096 (omitting it leaves only the global limit).
func checkMaxConcurrentFlag(fs *flag.FlagSet) error {
	var err error
	fs.Visit(func(f *flag.Flag) {
		if f.Name != "max-concurrent" {
			return
		}
		if n, _ := strconv.Atoi(f.Value.String()); n < 1 || n > keyring.MaxConcurrentCap {
			err = fmt.Errorf("%w: --max-concurrent must be from 1 to %d (omit it for only the global limit)", errUsage, keyring.MaxConcurrentCap)
		}
	})
	return err
}
