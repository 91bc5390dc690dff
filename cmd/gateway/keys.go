package main

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/signal"
	"strconv"
	"strings"
	"syscall"
	"text/tabwriter"
	"time"

	"github.com/pmgate/pmgate/adapters/httpapi"
	"github.com/pmgate/pmgate/adapters/keyfile"
	"github.com/pmgate/pmgate/domain/errs"
	"github.com/pmgate/pmgate/domain/keyring"
)

// keysPollInterval is how often serve looks for a changed key file.
const keysPollInterval = 2 * time.Second

// apiKeys is the ingress's keyring: the key file's slots, or the one slot
// "default" of PROVIDER_API_KEY.
func apiKeys(cfg config) *httpapi.Keyring {
	if cfg.keysFile == "" {
		return httpapi.StaticKeyring(cfg.principalKey, map[string]string{"default": cfg.apiKey})
	}
	return httpapi.NewKeyring(cfg.principalKey, cfg.keys.Slots)
}

// watchKeys reloads the key file on change and on SIGHUP until ctx ends. A
// file that fails validation keeps the previous set; the log says why (never
// a key).
func watchKeys(ctx context.Context, cfg config, keys *httpapi.Keyring, log *slog.Logger) {
	hup := make(chan os.Signal, 1)
	signal.Notify(hup, syscall.SIGHUP)
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
	keyfile.Watch(ctx, cfg.keysFile, cfg.request.models, keysPollInterval, trigger, cfg.keysSum,
		func(r keyring.Ring) {
			keys.Replace(r.Slots)
			ids := make([]string, len(r.Slots))
			for i, s := range r.Slots {
				ids[i] = s.ID
			}
			log.Info("key file reloaded", "slots", len(r.Slots), "slot_ids", ids)
		},
		func(err error, kept func(string, [32]byte) bool) {
			revoked := 0
			if kept != nil {
				revoked = keys.Retain(kept) // a revocation takes effect even in a refused file
			}
			log.Warn("key file refused; the previous keys stay in force", "code", string(errs.CodeOf(err)),
				"reason", err.Error(), "slots_in_force", keys.Len(), "slots_revoked", revoked)
		})
}

const keysUsage = `usage: gateway keys <new|list|revoke> [flags]

  keys new [--id ID] [--models a,b] [--max-concurrent N] [--note TEXT]
      generate a key, print it once, store only its SHA-256 as a new slot
  keys list
      the slots: id, created, models, concurrency limit, note (never a key)
  keys revoke ID
      remove the slot; a running serve refuses its key on the next request

flags of every subcommand:
  --file FILE       the key file (default: PROVIDER_KEYS_FILE)
  --env-file FILE   read KEY=VALUE lines first (PROVIDER_KEYS_FILE, PROVIDER_MODELS)

Edits are atomic (temporary file, fsync, rename) and refused while another
edit runs or when the file changed during the edit. A running serve reloads
the file within a few seconds, or at once on SIGHUP.
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
	if done, err := parseFlags(fs, args, keysUsage, stdout); done {
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
		return keysNew(path, configured, *id, *models, *maxConc, *note, stdout)
	case "list":
		if fs.NArg() != 0 {
			return fmt.Errorf("%w: keys list takes no arguments", errUsage)
		}
		return keysList(path, stdout)
	case "revoke":
		if fs.NArg() != 1 {
			return fmt.Errorf("%w: keys revoke takes one slot id", errUsage)
		}
		return keysRevoke(path, configured, fs.Arg(0), stdout)
	default:
		fmt.Fprint(stderr, keysUsage)
		return fmt.Errorf("%w: unknown keys subcommand %q", errUsage, sub)
	}
}

// newKey returns a fresh API key: "pmg-" and base64url of 32 CSPRNG bytes.
func newKey() string {
	b := make([]byte, 32)
	if _, err := rand.Read(b); err != nil {
		panic(err) // crypto/rand does not fail on supported platforms
	}
	return "pmg-" + base64.RawURLEncoding.EncodeToString(b)
}

func keysNew(path string, configured []string, id, models string, maxConc int, note string, stdout io.Writer) error {
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
	key := newKey()
	s := keyring.Slot{ID: id, Digest: sha256.Sum256([]byte(key)), Models: allow, MaxConcurrent: maxConc, Note: note,
		Created: time.Now().UTC().Truncate(time.Second)}
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

func keysList(path string, stdout io.Writer) error {
	r, _, err := keyfile.Load(path, nil)
	if err != nil {
		return err
	}
	tw := tabwriter.NewWriter(stdout, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "ID\tCREATED\tMODELS\tMAX_CONCURRENT\tNOTE")
	for _, s := range r.Slots {
		ms, mc := "all", "-"
		if len(s.Models) > 0 {
			ms = strings.Join(s.Models, ",")
		}
		if s.MaxConcurrent > 0 {
			mc = strconv.Itoa(s.MaxConcurrent)
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\n", s.ID, s.Created.Format(time.RFC3339), ms, mc, s.Note)
	}
	return tw.Flush()
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
