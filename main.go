// Command contain runs a command inside a kill-on-close group, tags every
// process of it with RUNNING_PROCESS_ORIGINATOR, and cleans up after crashes.
package main

import (
	"errors"
	"fmt"
	"io"
	"os"
	"runtime/debug"

	"github.com/urfave/cli/v2"

	"github.com/contain-cli/contain/internal/run"
	"github.com/contain-cli/contain/internal/runcmd"
)

// version is stamped at release time with -ldflags "-X main.version=...".
var version = ""

// contain run and the crash guard run from internal/runcmd's init
// function, before urfave/cli is initialised, except on Windows, where
// Dispatch runs them here. What returns is every other command, and contain
// run's help.
func main() {
	runcmd.Dispatch(os.Args)
	// runcmd.Exit: contain run taken by urfave/cli (which runs it only
	// where the fast path gives way) ends as the fast path does.
	runcmd.Exit(runApp(os.Args, os.Stdout, run.Stderr()))
}

// runApp runs the app and turns its error into one line on stderr and an
// exit status.
func runApp(args []string, stdout, stderr io.Writer) int {
	return exitCode(newApp(stdout, stderr).Run(args), stderr)
}

// exitCode prints err, if any, as one line and returns the exit status.
func exitCode(err error, stderr io.Writer) int {
	var ee *exitError
	if errors.As(err, &ee) {
		if ee.err != nil {
			fmt.Fprintf(stderr, "contain: %v\n", ee.err)
		}
		return ee.code
	}
	return runcmd.ExitCode(err, stderr)
}

func newApp(stdout, stderr io.Writer) *cli.App {
	cli.VersionFlag = &cli.BoolFlag{Name: "version", Usage: "print the version and exit", DisableDefaultText: true}
	return &cli.App{
		Name:      "contain",
		Usage:     "run a command so that nothing it starts outlives it",
		Version:   appVersion(),
		Writer:    stdout,
		ErrWriter: stderr,
		Commands:  []*cli.Command{runCommand, psCommand, reapCommand, completionCommand},
		// Errors are printed once, by runApp, never by the library.
		ExitErrHandler: func(*cli.Context, error) {},
		OnUsageError:   usageError,
		CommandNotFound: func(c *cli.Context, name string) {
			fmt.Fprintf(stderr, "contain: unknown command %q (see contain --help)\n", name)
			cli.OsExiter(2)
		},
	}
}

// appVersion is the stamped version, else the module version go install
// recorded, else "dev".
func appVersion() string {
	if version != "" {
		return version
	}
	if bi, ok := debug.ReadBuildInfo(); ok && bi.Main.Version != "" && bi.Main.Version != "(devel)" {
		return bi.Main.Version
	}
	return "dev"
}

// exitError carries the exit status a command wants; err, if set, is printed
// as "contain: err".
type exitError struct {
	code int
	err  error
}

func (e *exitError) Error() string {
	if e.err == nil {
		return fmt.Sprintf("exit status %d", e.code)
	}
	return e.err.Error()
}

func (e *exitError) Unwrap() error { return e.err }
