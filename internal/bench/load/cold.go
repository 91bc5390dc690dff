package main

import (
	"bytes"
	"context"
	"fmt"
	"math/rand/v2"
	"slices"
	"time"
)

// The cold pass. Agent turns arrive seconds apart, so a gateway in use is
// usually cold: its goroutines parked, its threads asleep, its caches cooled
// by other work. The rounds' back-to-back requests hide that (each request
// finds the previous one's threads still spinning). The cold pass sends each
// request after an idle gap (-cold-gap) and interleaves the targets (each
// request of the pass goes to the targets in a fresh random order, so no
// target's previous request was the one just before), and asks the emulator
// to send its events -cold-event-gap apart (the slow_stream scenario), as a
// model produces them: every event then wakes the proxy anew.
//
// Per round it runs -cold fresh turns (sequential, stream:false on the
// gateway) and then -cold streamed turns through every target, and reads the
// CPU time each process under test used over each of the two halves.

// coldQuery is the prompt of the cold pass: the emulator's slow_stream
// scenario, the normal reply with its events -cold-event-gap apart.
const coldQuery = "hi #scenario=slow_stream"

// Cold metric keys.
func coldKey(field string) string { return "cold/" + field }

const (
	cSeq       = "seq"           // sequential fresh turn, µs
	cFirst     = "first"         // streamed turn: first content, µs
	cLast      = "last"          // streamed turn: last byte, µs
	cCPUSeq    = "cpu_seq"       // CPU of the process under test per fresh turn, µs
	cCPUStream = "cpu_stream"    // the same per streamed turn
	cSleepSeq  = "sleeps_seq"    // the process's threads' sleeps per fresh turn
	cSleepStrm = "sleeps_stream" // the same per streamed turn
)

// coldSettle is the quiet before a cold pass: the last burst's GC and
// written-back work finish first.
const coldSettle = 100 * time.Millisecond

// coldPass runs one round's cold pass; an error means the rig cannot go on.
func (r *rig) coldPass(ctx context.Context, res *results, round int) error {
	if r.s.cold == 0 {
		return nil
	}
	if err := sleepCtx(ctx, coldSettle); err != nil {
		return err
	}
	for _, streamed := range []bool{false, true} {
		before, sleepsBefore := map[string]int64{}, map[string]int64{}
		for _, name := range r.names {
			if t := r.targets[name]; t.server != nil {
				ns, err := cpuNanos(t.server.pid(), r.clkTck)
				if err != nil {
					return fmt.Errorf("%s CPU: %w", name, err)
				}
				before[name] = ns
				if sleepsBefore[name], err = threadSleeps(t.server.pid()); err != nil {
					return fmt.Errorf("%s threads: %w", name, err)
				}
			}
		}
		lat, first, last := map[string][]float64{}, map[string][]float64{}, map[string][]float64{}
		fails := map[string]int{}
		var buf bytes.Buffer
		order := slices.Clone(r.names)
		for i := 0; i < r.s.cold; i++ {
			rand.Shuffle(len(order), func(i, j int) { order[i], order[j] = order[j], order[i] })
			for _, name := range order {
				if fails[name] >= maxPhaseFailures {
					continue
				}
				if err := sleepCtx(ctx, r.s.coldGap); err != nil {
					return err
				}
				t := r.targets[name]
				var err error
				if streamed {
					var ss streamStats
					if ss, err = t.stream(ctx, t.coldStreamBody); err == nil {
						first[name] = append(first[name], micros(ss.firstContent))
						last[name] = append(last[name], micros(ss.lastByte))
					}
				} else {
					var d float64
					if d, err = t.roundTrip(ctx, t.coldBody, &buf); err == nil {
						if err = t.cheapCheck(buf.Bytes()); err == nil {
							lat[name] = append(lat[name], micros(d))
						}
					}
				}
				if err != nil {
					if ctx.Err() != nil {
						return context.Cause(ctx)
					}
					fails[name]++
					res.fail(name, 1, wrap("cold pass", err))
				}
			}
		}
		for _, name := range r.names {
			done := len(lat[name])
			if streamed {
				done = len(first[name])
				if done > 0 {
					res.set(coldKey(cFirst), name, round, median(first[name]))
					res.set(coldKey(cLast), name, round, median(last[name]))
				}
			} else if done > 0 {
				res.set(coldKey(cSeq), name, round, median(lat[name]))
			}
			t := r.targets[name]
			if t.server == nil || done == 0 {
				continue
			}
			ns, err := cpuNanos(t.server.pid(), r.clkTck)
			if err != nil {
				return fmt.Errorf("%s CPU: %w", name, err)
			}
			sleeps, err := threadSleeps(t.server.pid())
			if err != nil {
				return fmt.Errorf("%s threads: %w", name, err)
			}
			key, sleepKey := cCPUSeq, cSleepSeq
			if streamed {
				key, sleepKey = cCPUStream, cSleepStrm
			}
			res.set(coldKey(key), name, round, float64(ns-before[name])/1e3/float64(done))
			res.set(coldKey(sleepKey), name, round, float64(sleeps-sleepsBefore[name])/float64(done))
		}
	}
	return nil
}
