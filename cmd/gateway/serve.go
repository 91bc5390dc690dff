package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"strconv"
	"sync"
	"time"

	"github.com/pmgate/pmgate/adapters/httpapi"
	"github.com/pmgate/pmgate/adapters/memstore"
	"github.com/pmgate/pmgate/adapters/pgstore"
	"github.com/pmgate/pmgate/adapters/postman"
	"github.com/pmgate/pmgate/adapters/system"
	"github.com/pmgate/pmgate/app"
	"github.com/pmgate/pmgate/domain/conversation"
	"github.com/pmgate/pmgate/domain/correlation"
	"github.com/pmgate/pmgate/domain/errs"
	"github.com/pmgate/pmgate/ports"
)

// shutdownGrace bounds how long in-flight requests may finish after a signal.
const shutdownGrace = 30 * time.Second

func runServe(ctx context.Context, args []string, getenv func(string) string, stdout, stderr io.Writer, upstream []postman.Option) error {
	cfg, done, err := configCommand("serve", serveHelp, args, getenv, stdout)
	if done || err != nil {
		return err
	}
	log := newLogger(cfg, stderr)
	for _, w := range configWarnings(cfg) {
		log.Warn("configuration warning", "warning", w)
	}
	gw, err := startGateway(ctx, cfg, log, upstream...)
	if err != nil {
		return err
	}
	return gw.wait(ctx)
}

// gateway is a running gateway process: listener, HTTP server, store sweeper.
type gateway struct {
	cfg    config
	log    *slog.Logger
	ln     net.Listener
	srv    *http.Server
	store  store
	stop   context.CancelFunc
	served chan error
	wg     sync.WaitGroup
}

// startGateway wires the ports into the app and starts serving. opts reach the
// Postman adapter (the demo trusts its emulator's CA and dials it).
func startGateway(ctx context.Context, cfg config, log *slog.Logger, opts ...postman.Option) (*gateway, error) {
	return startGatewayWith(ctx, cfg, log, nil, opts...)
}

// startGatewayWith is startGateway with the adapter wrapped by wrap (nil: not
// wrapped); `gateway probe` counts and bounds its dispatches this way.
func startGatewayWith(ctx context.Context, cfg config, log *slog.Logger, wrap func(ports.Upstream) ports.Upstream, opts ...postman.Option) (*gateway, error) {
	base := []postman.Option{postman.WithLogger(log), postman.WithRedactedSecrets(cfg.apiKey),
		postman.WithMaxIdleConns(cfg.maxConcurrent)}
	var store store
	monitor := httpapi.NewMonitor(httpapi.MonitorConfig{Version: version, Strategy: string(cfg.upstream.Strategy),
		Counts: func(ctx context.Context) (correlation.Counts, error) { return store.Counts(ctx) }})
	base = append(base, postman.WithExchangeHook(func(e postman.Exchange) {
		monitor.ObserveExchange(e.Strategy, e.Outcome, e.Rule, e.Row)
	}))
	client, err := postman.New(cfg.upstream, append(base, opts...)...)
	if err != nil {
		return nil, err
	}
	store, err = openStore(ctx, cfg, log)
	if err != nil {
		return nil, err
	}
	var upstream ports.Upstream = client
	if wrap != nil {
		upstream = wrap(client)
	}
	svc := app.New(app.Config{WorkspaceID: cfg.upstream.WorkspaceID, Correlation: cfg.correlation, Policy: cfg.policy,
		OnDecision: monitor.ObserveDecision}, upstream, store, system.Clock{}, system.IDs{}, log)
	var anchors anchorStore
	if cfg.continuity {
		anchors = openAnchors(cfg, store)
		svc.WithAnchors(anchors, cfg.anchorPolicy)
	}
	keys := apiKeys(cfg)
	handler := httpapi.NewServer(httpapi.Config{
		Keys:               keys,
		PrincipalKey:       cfg.principalKey,
		Models:             cfg.request.models,
		Strategy:           string(cfg.upstream.Strategy),
		MaxBodyBytes:       int64(cfg.request.limits.MaxBodyBytes),
		MaxTools:           cfg.request.limits.MaxTools,
		MaxToolResultBytes: cfg.request.limits.MaxToolResultBytes,
		MaxConcurrent:      cfg.maxConcurrent,
		RequestTimeout:     cfg.request.limits.RequestTimeout,
		BodyReadTimeout:    cfg.bodyTimeout,
		AllowedHosts:       cfg.allowedHosts,
		ToolSchemaPolicy:   cfg.request.toolSchemaPolicy,
		WidenCombinators:   cfg.request.widenCombinators,
		Health: func(ctx context.Context) map[string]any {
			return map[string]any{"correlation": storeHealth(ctx, cfg, store), "conversation": anchorHealth(ctx, cfg, anchors)}
		},
		Monitor:      monitor,
		MetricsOpen:  cfg.metricsOpen,
		Admin:        adminInfo(cfg),
		Verification: probeVerification(cfg, time.Now),
	}, svc, log)
	tcp, err := net.Listen("tcp", net.JoinHostPort(cfg.host, strconv.Itoa(cfg.port)))
	if err != nil {
		store.Close()
		return nil, fmt.Errorf("listen: %w", err)
	}
	ln := httpapi.NewListener(tcp, cfg.maxConnections, log)
	runCtx, stop := context.WithCancel(context.WithoutCancel(ctx))
	gw := &gateway{cfg: cfg, log: log, ln: ln, store: store, stop: stop, served: make(chan error, 1),
		srv: httpapi.NewHTTPServer(handler, ln, log)}
	gw.wg.Add(1)
	go func() {
		defer gw.wg.Done()
		store.Run(runCtx, time.Second, system.Clock{}, log, monitor.ObserveSweep)
	}()
	if anchors != nil {
		gw.wg.Add(1)
		go func() {
			defer gw.wg.Done()
			sweepAnchors(runCtx, anchors, time.Second, log)
		}()
	}
	if cfg.keysFile != "" {
		gw.wg.Add(1)
		go func() {
			defer gw.wg.Done()
			watchKeys(runCtx, cfg, keys, log)
		}()
	}
	go func() { gw.served <- gw.srv.Serve(ln) }()
	log.Info("listening", "addr", ln.Addr().String(), "strategy", string(cfg.upstream.Strategy),
		"correlation_store", cfg.store, "principal_key_random", cfg.principalRandom, "conversation_continuity", cfg.continuity)
	return gw, nil
}

// addr is the chosen listen address.
func (g *gateway) addr() string { return g.ln.Addr().String() }

// wait serves until ctx ends, then shuts down gracefully: stop accepting, let
// in-flight requests finish up to shutdownGrace, cancel pending tool-call
// groups and log the counts. A clean shutdown returns nil (exit 0).
func (g *gateway) wait(ctx context.Context) error {
	select {
	case err := <-g.served:
		g.stop()
		g.wg.Wait()
		return err
	case <-ctx.Done():
	}
	g.log.Info("shutting down", "grace", shutdownGrace.String())
	sctx, cancel := context.WithTimeout(context.Background(), shutdownGrace)
	defer cancel()
	err := g.srv.Shutdown(sctx)
	if errors.Is(err, context.DeadlineExceeded) {
		g.log.Warn("in-flight requests cut at the shutdown bound")
		_ = g.srv.Close()
		err = nil
	}
	g.stop()
	g.wg.Wait()
	n, c := g.store.Shutdown(time.Now())
	states := map[string]int{}
	for s, k := range c.ByState {
		states[string(s)] = k
	}
	g.log.Info("correlation store closed", "store", g.cfg.store, "pending_cancelled", n, "groups_by_state", states)
	g.store.Close()
	if err := <-g.served; err != nil && !errors.Is(err, http.ErrServerClosed) {
		return err
	}
	return err
}

// store is the correlation store of a running gateway: the port plus the
// process-level operations both adapters provide.
type store interface {
	ports.CorrelationStore
	Run(ctx context.Context, every time.Duration, clock ports.Clock, log *slog.Logger, onSweep func(correlation.SweepReport))
	Shutdown(now time.Time) (cancelled int, counts correlation.Counts)
	Close()
}

// memoryStore adapts memstore (which needs no Close) to store.
type memoryStore struct{ *memstore.Store }

func (memoryStore) Close() {}

// openStore opens the configured correlation store. The memory store cancels
// its pending groups on shutdown; the PostgreSQL store leaves them to the other
// replicas.
func openStore(ctx context.Context, cfg config, log *slog.Logger) (store, error) {
	if cfg.store == "postgres" {
		return pgstore.Open(ctx, cfg.postgresURL, cfg.limits, cfg.policy, log)
	}
	return memoryStore{memstore.New(cfg.limits, cfg.policy)}, nil
}

// anchorStore is the conversation anchor store of a running gateway.
type anchorStore = ports.AnchorStore

// sweepAnchors applies time to the anchors every interval until ctx ends
// (several replicas may sweep one database at once: they take disjoint rows).
// A failing sweep is logged when it starts and stops failing, not every tick.
func sweepAnchors(ctx context.Context, st anchorStore, every time.Duration, log *slog.Logger) {
	t := time.NewTicker(every)
	defer t.Stop()
	failing := false
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
			rep, err := st.Sweep(ctx, system.Clock{}.Now())
			switch {
			case err != nil && ctx.Err() != nil:
				return
			case err != nil && !failing:
				log.Warn("conversation sweep failed", "code", string(errs.CodeOf(err)))
			case err == nil && rep.Expired+rep.Retired+rep.Removed > 0:
				log.Info("conversation sweep", "expired", rep.Expired, "retired", rep.Retired, "removed", rep.Removed)
			}
			failing = err != nil
		}
	}
}

// openAnchors returns the anchor store beside the correlation store: in the
// same PostgreSQL database (so every replica continues every conversation),
// or in memory.
func openAnchors(cfg config, st store) anchorStore {
	if pg, ok := st.(*pgstore.Store); ok {
		return pg.Anchors(cfg.anchorLimits, cfg.anchorPolicy)
	}
	return memstore.NewAnchors(cfg.anchorLimits, cfg.anchorPolicy)
}

// anchorHealth is the conversation part of /health: anchors per state, their
// bytes and the limit — never an id.
func anchorHealth(ctx context.Context, cfg config, st anchorStore) map[string]any {
	h := map[string]any{"continuity": cfg.continuity}
	if st == nil {
		return h
	}
	c, err := st.Counts(ctx)
	if err != nil {
		h["state"], h["code"] = "unavailable", string(errs.CodeOf(err))
		return h
	}
	states := map[string]int{}
	for _, s := range conversation.States {
		if s != conversation.Removed {
			states[string(s)] = c.ByState[s]
		}
	}
	h["state"], h["anchors_by_state"], h["anchors"] = "ok", states, c.Anchors
	h["bytes"], h["max_anchors"], h["ttl_ms"] = c.Bytes, c.MaxAnchors, cfg.anchorPolicy.TTL.Milliseconds()
	return h
}

// storeHealth is the correlation part of /health: counts per state and
// capacity use (never an id), and for PostgreSQL whether the database answers.
func storeHealth(ctx context.Context, cfg config, st store) map[string]any {
	h := map[string]any{"store": cfg.store, "enabled": cfg.correlation}
	if pg, ok := st.(*pgstore.Store); ok {
		pctx, cancel := context.WithTimeout(ctx, 2*time.Second)
		defer cancel()
		if err := pg.Ping(pctx); err != nil {
			h["state"], h["code"] = "unavailable", string(errs.CorrelationStoreUnavailable)
			return h
		}
		h["state"], h["schema_version"] = "ok", pg.SchemaVersion()
	}
	c, err := st.Counts(ctx)
	if err != nil {
		h["state"], h["code"] = "unavailable", string(errs.CodeOf(err))
		return h
	}
	states := map[string]int{}
	for s, n := range c.ByState {
		states[string(s)] = n
	}
	h["groups_by_state"], h["live_groups"], h["live_calls"] = states, c.LiveGroups, c.LiveCalls
	h["reserved_groups"], h["cache_bytes"] = c.ReservedGroups, c.CacheBytes
	h["max_groups"], h["max_calls"], h["max_cache_bytes"] = c.MaxGroups, c.MaxCalls, c.ResponseCacheBytes
	return h
}

// adminInfo is what the control page shows of the configuration (nil when
// ADMIN_ENABLED is false): check-config's redacted summary, never a secret.
func adminInfo(cfg config) *httpapi.AdminInfo {
	if !cfg.adminEnabled {
		return nil
	}
	a := &httpapi.AdminInfo{Version: version, UpstreamHost: cfg.upstream.Summary()["host"], Summary: cfg.summary()}
	for _, m := range cfg.upstream.Models {
		a.Models = append(a.Models, httpapi.AdminModel{Public: m.Public, Upstream: m.Upstream, Observed: m.Observed})
	}
	return a
}
