package app

import (
	"context"
	"sync"
	"time"

	"github.com/pmgate/pmgate/domain/conversation"
	"github.com/pmgate/pmgate/domain/correlation"
	"github.com/pmgate/pmgate/domain/errs"
)

// shutdownCountsBound bounds the last look at the store when the process stops:
// an unreachable database must not hold the exit.
const shutdownCountsBound = 2 * time.Second

// RunSweeps applies time to the gateway's stores every interval until ctx
// ends: the correlation store (overdue groups expire or become UNCERTAIN, old
// tombstones go) and, with conversation continuity, the anchor store. The
// observer receives the rows every sweep applied (EventSweep). Several
// replicas may sweep one database at once: the stores take disjoint rows. A
// failing sweep is logged when it starts failing and when it recovers, not on
// every tick of an outage. It returns once both loops have stopped.
func (g *Gateway) RunSweeps(ctx context.Context, every time.Duration) {
	var wg sync.WaitGroup
	loop := func(name string, sweep func(context.Context, time.Time) ([]any, error)) {
		wg.Add(1)
		go func() {
			defer wg.Done()
			g.sweepLoop(ctx, every, name, sweep)
		}()
	}
	if g.store != nil {
		loop("correlation", func(ctx context.Context, now time.Time) ([]any, error) {
			rep, err := g.store.Sweep(ctx, now)
			g.observeSweep(ctx, correlation.MachineName, correlationRows, rep.Rows)
			return changes("expired", rep.Expired, "uncertain", rep.Uncertain, "removed", rep.Removed), err
		})
	}
	if g.anchors != nil {
		loop("conversation", func(ctx context.Context, now time.Time) ([]any, error) {
			rep, err := g.anchors.Sweep(ctx, now)
			g.observeSweep(ctx, conversation.MachineName, conversationRows, rep.Rows)
			return changes("expired", rep.Expired, "retired", rep.Retired, "removed", rep.Removed), err
		})
	}
	wg.Wait()
}

// changes returns the log attributes of a sweep's counts (name, count pairs),
// or nil when every count is zero.
func changes(attrs ...any) []any {
	for i := 1; i < len(attrs); i += 2 {
		if attrs[i].(int) != 0 {
			return attrs
		}
	}
	return nil
}

// sweepLoop calls sweep every interval until ctx ends. sweep returns the log
// attributes of what it changed (nil when nothing) and its error; a sweep may
// have changed something before it failed.
func (g *Gateway) sweepLoop(ctx context.Context, every time.Duration, name string, sweep func(context.Context, time.Time) ([]any, error)) {
	t := time.NewTicker(every)
	defer t.Stop()
	failing := false
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
			changed, err := sweep(ctx, g.clock.Now())
			switch {
			case err != nil && ctx.Err() != nil:
				return
			case err != nil && !failing: // log the change, not every tick of an outage
				g.log.Warn(name+" sweep failed", "code", string(errs.CodeOf(err)), "error", errs.Redact(err))
			case err == nil && failing:
				g.log.Info(name + " sweep recovered")
			}
			failing = err != nil
			if changed != nil {
				g.log.Info(name+" sweep", changed...)
			}
		}
	}
}

// Shutdown settles the correlation store when the process stops, after the
// last request has finished: the pending groups of a store private to this
// process are cancelled (nobody could ever continue them, and a client that
// submits results to a restarted gateway is then told the group was
// cancelled rather than that it never existed); a shared store's are left to
// the other replicas. In-flight groups are left to their requests either way.
// It returns how many groups it cancelled and the counts seen last (empty
// when the store cannot be read). Closing the store is its opener's job.
func (g *Gateway) Shutdown(ctx context.Context) (cancelled int, counts correlation.Counts) {
	if g.store == nil {
		return 0, correlation.Counts{ByState: map[correlation.State]int{}}
	}
	ctx, cancel := context.WithTimeout(ctx, shutdownCountsBound)
	defer cancel()
	if !g.store.Shared() {
		cancelled = g.cancelPending(ctx)
	}
	c, err := g.store.Counts(ctx)
	if err != nil {
		c = correlation.Counts{ByState: map[correlation.State]int{}}
	}
	return cancelled, c
}

// cancelPending cancels every PENDING group through the machine (an explicit
// server decision) and returns how many it cancelled.
func (g *Gateway) cancelPending(ctx context.Context) int {
	keys, err := g.store.Pending(ctx)
	if err != nil {
		g.log.Warn("pending groups unreadable at shutdown", "code", string(errs.CodeOf(err)), "error", errs.Redact(err))
		return 0
	}
	n := 0
	now := g.clock.Now()
	for _, k := range keys {
		_, err := g.store.Update(ctx, k, func(gr *correlation.Group) (correlation.Decision, error) {
			return gr.Cancel(now, g.cfg.Policy)
		})
		if err == nil {
			n++
		}
	}
	return n
}
