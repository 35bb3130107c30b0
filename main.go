// Command contain runs a command inside a kill-on-close group, tags every
// process of it with RUNNING_PROCESS_ORIGINATOR, and cleans up after crashes.
package main

import (
	"io"
	"os"
	"runtime/debug"

	"github.com/urfave/cli/v2"

	// contain run, the crash guard and the shim run from its init
	// function, before urfave/cli and regexp, text/template and the like
	// are initialised (start-up: bench/README.md), except on Windows.
	_ "github.com/contain-cli/contain/internal/earlyrun"
	"github.com/contain-cli/contain/internal/nosigpipe"
	"github.com/contain-cli/contain/internal/runcmd"
	"github.com/contain-cli/contain/internal/status"
	"github.com/contain-cli/contain/internal/text"
)

// version is stamped at release time with -ldflags "-X main.version=...".
var version = ""

// contain run, the crash guard and the shim have run, and exited, in
// internal/earlyrun's init function, except on Windows, where the same
// Dispatch runs them here. What goes on is every other command, and
// contain run's help.
func main() {
	runcmd.Dispatch(os.Args)
	// runcmd.Exit: contain run taken by urfave/cli ends as Dispatch's does.
	runcmd.Exit(runApp(os.Args, os.Stdout, nosigpipe.Stderr()))
}

// runApp runs the app and turns its error into one line on stderr and an
// exit status.
func runApp(args []string, stdout, stderr io.Writer) int {
	if len(args) < 2 {
		// A wrapper that lost its command must not "succeed".
		text.Fprintf(stderr, "contain: missing command (usage: contain run|timeout|ps|reap|stop|wait|completion|help ...; see contain --help)\n")
		return 2
	}
	app := newApp(stdout, stderr)
	args, err := typedOptions(app, args)
	if err != nil {
		return status.Of(err, stderr)
	}
	return status.Of(app.Run(args), stderr)
}

func newApp(stdout, stderr io.Writer) *cli.App {
	cli.VersionFlag = &cli.BoolFlag{Name: "version", Usage: "print the version and exit", DisableDefaultText: true}
	return &cli.App{
		Name:      "contain",
		Usage:     "run a command so that nothing it starts outlives it",
		Version:   appVersion(),
		Writer:    stdout,
		ErrWriter: stderr,
		Commands:  []*cli.Command{runCommand, timeoutCommand, psCommand, reapCommand, stopCommand, waitCommand, completionCommand},
		// Errors are printed once, by runApp, never by the library.
		ExitErrHandler: func(*cli.Context, error) {},
		OnUsageError:   usageError,
		CommandNotFound: func(c *cli.Context, name string) {
			text.Fprintf(stderr, "contain: unknown command %q (see contain --help)\n", name)
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
