// Package containment runs commands so that nothing they start outlives
// them: what `contain run` does, for a Go program that starts commands
// itself (a test runner, an agent supervisor, a dev server, a CI agent).
//
// A program makes a Group and starts its *exec.Cmd values through it:
//
//	func main() {
//		g, err := containment.NewGroup(containment.Options{Originator: "MYTOOL"})
//		if errors.Is(err, containment.ErrUnsupported) {
//			// no containment on this OS: run commands as before
//		}
//		...
//		cmd := exec.Command("make", "-j8")
//		if err := g.Start(cmd); err != nil { ... }
//		pid := g.Pid(cmd) // make's PID (cmd.Process is the copy that holds it)
//		err = g.Wait(cmd) // nil, or an *ExitError: which ended, and how
//		reports, err := g.Close(ctx)
//	}
//
// Nothing else is asked of main: the package's init function runs the
// copies (below) before the program's own, so a test binary is a host
// as it is, with or without a TestMain. Calling Main first in main, as
// programs written before did, is harmless.
//
// # How it works
//
// Each command started is one session of `contain run`, run by a copy of
// the program itself: Start re-executes the program's own executable
// (os.Executable), and the copy, from this package's init function,
// runs the command as contain run does: the same engine (internal/run's
// Spec and Outcome), sent to the copy on its own pipe field by field, with no
// flags, no temporary files and nothing read from the environment. The copy puts the command in a kill-on-close group (a cgroup,
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
// and closes the group; Close does the same on purpose (the report's
// told_to_stop says so), and returns once every copy has ended, that is
// once nothing of the groups is left. On the other pipe the copy tells
// the program the command's PID once it runs, contain's own lines, and
// how the run ended (the Outcome Wait reads, with the report).
//
// # One session per command
//
// Each command is a session of its own, tagged TOOL:PID with its copy's
// PID: the copy is the process that made the group and holds it (the
// originator of the RUNNING_PROCESS_ORIGINATOR contract), and lives
// exactly as long as the group. So `contain stop TOOL:PID` ends one
// command and leaves the program and its other commands running; a copy
// killed on its own leaves its session orphaned, and `contain reap
// --session TOOL:PID` may end it while the program runs on. Were the
// program's own PID the tag, the program would be every session's
// originator: a live program would keep a killed copy's leftovers
// "alive" (never reapable) until it ended, and contain stop would
// signal the program itself. After the program crashes, the copies see
// their pipes close and close every group; should they be killed too,
// `contain reap -o TOOL` ends every session of the program's TOOL at
// once.
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
//   - The copy, the crash guard and the shim are recognised by the first
//     argument (__contain_group, __guard, __shim), which the program's
//     own command line must never begin with. They run from this
//     package's init function and exit there, so the program's init
//     functions that Go runs after this package's, and its main (its
//     tests, in a test binary), never run in them. On Windows, Go holds
//     console control events until initialisation is over: a copy hears
//     no Ctrl-C of its console; the program does.
//   - The program's executable must still be there to be re-executed
//     while it runs (os.Executable).
//   - cmd.Process is the copy that holds the command, not the command
//     itself; Group.Pid gives the command's PID. Group.Wait (in place of
//     cmd.Wait, which it calls) says how the command ended: nil, or an
//     *ExitError with its code or the signal that killed it, a timeout, a
//     limit, a start that failed, or HolderEnded when the copy itself was
//     killed first (cmd.Process.Kill, exec.CommandContext's cancel), in
//     which case it returns once the crash guard has ended the session's
//     processes. cmd.Wait alone gives the command's exit status as
//     contain run gives its own (the code, or the signal that killed it;
//     124 on a timeout, 137 when a limit killed the tree) but cannot tell
//     the copy's end from the command's. A signal sent with
//     cmd.Process.Signal reaches the copy, which forwards it to the whole
//     group as contain run does (after SIGTERM, SIGKILL follows the grace
//     period). The command's argv[0] is cmd.Path; cmd.Path, cmd.Args,
//     cmd.Env and cmd.String() are the command's again once Start
//     returns.
//   - The terminal stays the program's: a command runs in a process
//     group of its own, outside the terminal's foreground, unless
//     Options.Terminal hands it the terminal as contain run does.
//   - cmd.ExtraFiles are not supported (ErrExtraFiles). Stdin, Stdout,
//     Stderr, Env and Dir are the command's, as with exec.Cmd; on Unix
//     cmd.SysProcAttr applies to the copy. The copy runs with a few of
//     the program's own variables (PATH, HOME, TMPDIR, XDG_RUNTIME_DIR,
//     the tag of a session the program runs in; on Windows those Windows
//     itself needs) and takes no setting from any: its settings are the
//     Options, sent to it on its own pipe. cmd.Env is the command's alone:
//     a job's CONTAIN_REPORT, CONTAIN_DISABLE, CONTAIN_ORIGINATOR or
//     GODEBUG in it reaches the command, unchanged, and nothing else.
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
