// Command emu is the load rig's upstream: adapters/emulator on a loopback
// port, access_token strategy only, default (strict) profile. The rig builds it
// from its own tree, never from the -root it measures, so that every checkout
// it measures faces the same upstream (and the "#text_chunks=N" directive of
// the 50-event stream is there even when the gateway under test is older).
//
// -slow-delay sets the pause between the events of the slow_stream scenario
// (a prompt holding "#scenario=slow_stream"): the rig's cold pass asks for it
// so that the upstream's events arrive 2 ms apart, as a real model's do.
//
// It prints "origin https://ADDR" and "trust CA FILE" on stdout once it
// accepts connections, and stops on SIGINT or SIGTERM. The access token comes
// from EMULATOR_ACCESS_TOKEN, never from a flag.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"syscall"

	"github.com/pmgate/pmgate/adapters/emulator"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	err := run(ctx, os.Args[1:], os.Stdout)
	stop()
	if err != nil {
		fmt.Fprintln(os.Stderr, "emu:", err)
		os.Exit(1)
	}
}

func run(ctx context.Context, args []string, stdout io.Writer) error {
	fs := flag.NewFlagSet("emu", flag.ContinueOnError)
	addr := fs.String("addr", "127.0.0.1:0", "listen address (loopback only; the emulator refuses others)")
	workspace := fs.String("workspace", "", "workspace id the emulator requires")
	slow := fs.Duration("slow-delay", 0, "pause between the events of the slow_stream scenario (0: the emulator's default)")
	if err := fs.Parse(args); err != nil {
		return err
	}
	token := os.Getenv("EMULATOR_ACCESS_TOKEN")
	if token == "" {
		return errors.New("EMULATOR_ACCESS_TOKEN is empty")
	}
	emu, err := emulator.Start(ctx, emulator.Config{Addr: *addr, WorkspaceID: *workspace, AccessToken: token, SlowDelay: *slow})
	if err != nil {
		return err
	}
	defer emu.Close()
	fmt.Fprintf(stdout, "origin %s\ntrust CA %s\n", emu.Origin(), emu.CAFile())
	<-ctx.Done()
	return nil
}
