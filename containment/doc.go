// Package containment runs commands so that nothing they start outlives
// them: what `contain run` does, for a Go program that starts commands
// itself (a test runner, an agent supervisor, a dev server, a CI agent).
//
// A program calls Main as the first statement of its main function, makes
// a Group, and starts its *exec.Cmd values through it:
//
//	func main() {
//		containment.Main()
//		g, err := containment.NewGroup(containment.Options{Originator: "MYTOOL"})
//		...
//		cmd := exec.Command("make", "-j8")
//		if err := g.Start(cmd); err != nil { ... }
//		err = cmd.Wait() // COMMAND's exit status, as contain run gives it
//		reports, err := g.Close(ctx)
//	}
//
// # How it works
//
// Each command started is one session of `contain run`, run by a copy of
// the program itself: Start re-executes the program's own executable
// (os.Executable), and Main, in that copy, runs contain run on the
// command. The copy puts the command in a kill-on-close group (a cgroup,
// a subreaper shim and the process group on Linux; tracking and the
// process group on macOS; a Job Object on Windows), injects
// RUNNING_PROCESS_ORIGINATOR=TOOL:PID (PID being the copy's) into every
// process of it, starts the crash guard, and closes the group when the
// command ends: SIGTERM to everything left, SIGKILL after the grace
// period. `contain ps -o TOOL` lists the session while it runs, `contain
// stop TOOL:PID` ends it, and `contain reap --session TOOL:PID` ends what
// is left should the copy, its guard and its shim all be killed. Every
// promise of contain run holds, as the README says per OS.
//
// The program and each copy are tied by a pair of pipes: when the program
// ends, however it ends (SIGKILL included), the copy sees its pipe close
// and closes the group; Close does the same on purpose, and returns once
// every copy has ended, that is once nothing of the groups is left.
//
// # Sessions, wait and reap
//
// Sessions lists what contain ps lists (every tagged process, of any
// tool, grouped by session, alive or orphaned); Stop asks live sessions to
// end as contain stop does, Wait waits as contain wait does, and Reap ends
// orphaned sessions as contain reap does, each with the command's safety
// rules.
//
// # What the host must allow
//
// Nothing of contain runs in the program's own process but this package's
// bookkeeping: the program's other children are never waited for or
// signalled, its signal handlers are untouched, and no thread is locked.
// What the program must allow:
//
//   - Main is the first statement of main: in a copy it never returns.
//     It recognises the copy by its first argument (__contain_group,
//     __guard, __shim), which the program's own command line must never
//     begin with. On Linux and macOS the copy that holds a command
//     (__contain_group) does not even get there: it runs
//     from this package's init function and exits there, so the
//     program's init functions that Go runs after this package's, and
//     its main, do not run in it.
//   - The program's executable must still be there to be re-executed
//     while it runs (os.Executable).
//   - cmd.Process is the copy that holds the command, not the command
//     itself: cmd.Wait gives the command's exit status as contain run
//     gives its own (the code, or the signal that killed it; 124 on a
//     timeout, 137 when a limit killed the tree), and a signal sent with
//     cmd.Process.Signal reaches the copy, which forwards it to the whole
//     group as contain run does (after SIGTERM, SIGKILL follows the grace
//     period). The command's argv[0] is cmd.Path.
//   - cmd.ExtraFiles are not supported (ErrExtraFiles). Stdin, Stdout,
//     Stderr, Env and Dir are the command's, as with exec.Cmd; on Unix
//     cmd.SysProcAttr applies to the copy. The copy runs with cmd.Env but
//     takes no setting from it: its settings are the Options, sent to it
//     on its own pipe, and a job's CONTAIN_REPORT, CONTAIN_DISABLE or
//     CONTAIN_ORIGINATOR in cmd.Env reaches the command, unchanged, and
//     nothing else.
//   - The program must not be set-user-ID, set-group-ID, or given file
//     capabilities: where the kernel marks it so (AT_SECURE), this
//     package's init function says so in one line and exits with status
//     122, before main. The copy, the crash guard and the shim run only
//     on pipes and files that the program's own user (or root) made, and
//     otherwise exit 122 having done nothing (docs/SECURITY.md in the
//     repository says why).
//
// Nothing is written to the program's stderr: contain's own lines (its
// errors, and with Options.Verbose what -v says) go to Options.Log, or
// nowhere.
package containment
