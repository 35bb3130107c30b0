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
//		pid := g.Pid(cmd) // make's PID, as cmd.Process.Pid
//		err = g.Wait(cmd) // nil, or an *ExitError: how it ended
//		reports, err := g.Close(ctx)
//	}
//
// Nothing else is asked of main: the package's init function runs the
// copy of the program that holds the Group (below) before the program's
// own init functions, so a test binary is a host as it is, with or
// without a TestMain. Calling Main first in main, as programs written
// before did, is harmless.
//
// # How it works
//
// On Linux, where the program may make a cgroup in its own and start
// processes in it (as root outside a user namespace; as an ordinary user,
// or root of a user namespace, in a cgroup delegated to it, as systemd
// delegates a user's own manager's cgroups: a desktop's terminals,
// rootless containers), a Group is one kill-on-close group, one session of
// contain held by its cgroup and by a copy of the program itself, the
// holder: the first Start re-executes the program's own executable
// (os.Executable), and the copy, from this package's init function, runs
// contain's engine (internal/run, the engine of contain run) on a session
// of no command of its own (run.Spec.Hold), sent to it on its own pipe
// field by field, with no flags, no temporary files and nothing read from
// the environment. It starts the crash guard and makes the session's
// cgroup, as contain run does.
//
// Each command is then started by the program itself, as os/exec starts
// it (cmd.Start), with what puts it in the session: RUNNING_PROCESS_ORIGINATOR=
// TOOL:PID in its environment, PID being the holder's (Tag); a process
// group of its own; born in the session's cgroup (CLONE_INTO_CGROUP),
// which holds it from its first instruction, whatever it does, so that
// should the program die (the holder sees its pipe close) or the holder
// (its crash guard), the cgroup is ended with it inside. A command that
// cmd.SysProcAttr starts in a cgroup of its own is told to the holder
// (PID and start time), which keeps it whatever its environment shows
// later (a title written over it, env -i). What the commands start is the
// session's as contain run's leftovers are: by the cgroup, by the tag,
// and by its lineage as the holder's scans see it. (Should the holder
// make no cgroup, where cgroup v2 is not mounted or not writable, it
// closes its empty session and the Group holds each command in a copy of
// its own, below.)
//
// The program and the holder are tied by a pair of pipes: when the
// program ends, however it ends (SIGKILL included), the holder sees its
// pipe close and closes the session: SIGTERM to every process of it,
// SIGKILL after the grace period; Close does the same on purpose (the
// report's told_to_stop says so), and returns once nothing of the
// session is left. Should the holder be killed, its crash guard closes
// the session; should the holder and its guard both be killed, `contain
// reap --session TOOL:PID` (Reap) ends what is left. Every promise of
// contain run holds for the session, as the README says per OS.
//
// A command's own end: Group.Wait, once the command has ended and while
// its end, not yet reaped, keeps its process group its own, sends SIGTERM
// (and SIGCONT) to what it left in its process group, reaps it (cmd.Wait),
// and SIGKILLs what is still there after the grace period. What left the
// command's process group (setsid, a double fork) is the session's, ended
// by Close or the program's end. What a command costs is a start of
// os/exec and a few system calls (bench/README.md in the repository
// measures it); the holder's start is paid once per Group.
//
// On Windows the session is the holder's job object, kill on close, and
// the program holds a handle to it too (a duplicate of the holder's): each
// command is the program's own cmd.Start, started suspended in a console
// process group of its own, put into the job, and only then let run, so
// that no instruction of it runs outside the session. Should the program
// end, however it ends, its handle closes and the holder, seeing its pipe
// close, ends the job; should the holder be killed, its handle closes, and
// the program, seeing it gone, closes the last one, which ends the job
// with everything in it. Group.Wait ends the command's tree: on Windows a
// process keeps its parent's PID after the parent ended, so what the
// command started, a detached grandchild included, is found in the job
// after the command's end by its parent links (creation times guard
// against a PID taken again), sent CTRL_BREAK_EVENT where it is in the
// command's console process group, and terminated after the grace period;
// a process whose chain to the command broke (the process between ended)
// is the session's, ended by Close. Options.Timeout sends the command
// Signal as contain run does on Windows.
//
// Where nothing holds the session, each command is held by a copy of its
// own instead, as the first versions of this package held every command:
// Linux as an ordinary user in a cgroup not delegated to it (an ssh
// login's session scope, a CI runner's service) or where the hierarchy is
// read only (a container's), and macOS. That copy runs the command as
// contain run runs COMMAND (with the shim, a subreaper, on Linux), so its
// session is one command's, tagged with the copy's PID (Tag is ""),
// cmd.Process is the copy, and a command costs a start of the program
// (bench/README.md). A held session there would have nothing but the
// tracking to hold what the commands start, since they are no descendants
// of the holder, and the tracking does not follow a daemon's double fork
// between two scans: as nobody, redis, nginx, ssh-agent, gpg-agent and an
// env -i double fork outlived Close (TestLibraryRealDaemons).
//
// # One session per Group (where a cgroup or a job holds it)
//
// The tag's contract (the Rust crate running_process_core, whose
// ContainedProcessGroup defined RUNNING_PROCESS_ORIGINATOR) tags every
// process of a group with the PID of the process that spawned the group.
// Here that is the holder: it made the session, holds it, and lives
// exactly as long as the Group. What a program's users get from it after
// a crash: `contain ps -o TOOL` lists one session per Group, and
// `contain reap --session TOOL:PID` ends it all, or `contain reap -o
// TOOL` every Group of the program's TOOL; `contain stop TOOL:PID` ends
// the Group (the holder closes it) and leaves the program running. Were
// the program's own PID the tag, a live program would keep a killed
// holder's leftovers "alive" (never reapable) until it ended, and contain
// stop would signal the program. A session per command, as the first
// version had, cost a copy of the program, a crash guard and its start
// per command (5.8 times os/exec's start), and told contain ps nothing a
// program's users need: which command a process came from is its
// lineage, which contain ps shows.
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
// What runs in the program's own process is, for a held session, the
// start of each command, the timers of Options.Timeout, Wait's end of a
// command's process group and this package's bookkeeping: the program's
// other children are never waited for or signalled, and its signal
// handlers are untouched. (Options.Terminal blocks SIGTTOU on one thread
// for the moment it gives the terminal back.)
// What the program must allow:
//
//   - The holder (a copy of the program), the crash guard and the shim
//     are recognised by the first argument (__contain_group, __guard,
//     __shim), which the program's
//     own command line must never begin with. They run from this
//     package's init function and exit there, so the program's init
//     functions that Go runs after this package's, and its main (its
//     tests, in a test binary), never run in them. On Windows, Go holds
//     console control events until initialisation is over: a copy hears
//     no Ctrl-C of its console; the program does.
//   - The program's executable must still be there to be re-executed
//     while it runs (os.Executable).
//   - cmd.Process is the command, the program's own child: Start is
//     cmd.Start with the session's attributes (cmd.Env and
//     cmd.SysProcAttr are put back as they were once it returns), and
//     its errors are os/exec's (a command not found among them). Wait
//     (in place of cmd.Wait, which it calls) says how the command ended:
//     nil, or an *ExitError with its code or the signal that killed it,
//     a timeout (124; 137 when KillAfter's SIGKILL ended it), or
//     HolderEnded when the holder was killed and its crash guard (on
//     Windows the job's closing) ended the session; it sets cmd.WaitDelay to the grace period where it is
//     0, so that a process of the session that left the command's
//     process group and holds its output does not hold Wait. cmd.Wait
//     alone works as with os/exec, without Wait's end of the command's
//     process group. cmd.Process.Signal and exec.CommandContext's cancel
//     reach the command itself.
//   - The holder's Options.Timeout is the program's own: a timer per
//     command sends Signal to the command and its process group, SIGKILL
//     KillAfter later, as GNU timeout does. Options.Limits hold for the
//     whole session (every command together): a limit exceeded ends the
//     session, as it ends contain run's group, and the Group with it.
//   - The terminal stays the program's: a command runs in a process
//     group of its own, outside the terminal's foreground, unless
//     Options.Terminal hands it the terminal (the program gets it back
//     when Wait sees the command end, with the settings it had at the
//     command's start when the timeout or a signal ended the command).
//   - cmd.ExtraFiles, Stdin, Stdout, Stderr, Env, Dir and SysProcAttr
//     are the command's, as with exec.Cmd (Setsid in SysProcAttr: the
//     command leads a session of its own instead of a process group, in
//     the Group's session all the same). The holder runs with a few of
//     the program's own variables (PATH, HOME, TMPDIR, XDG_RUNTIME_DIR,
//     the tag of a session the program runs in) and takes no setting
//     from any: its settings are the Options, sent on its own pipe.
//     cmd.Env is the command's alone: a job's CONTAIN_REPORT,
//     CONTAIN_DISABLE, CONTAIN_ORIGINATOR or GODEBUG in it reaches the
//     command, unchanged. Where each command has a copy of its own (see
//     above), cmd.Process is that copy (Pid gives the command's), Wait
//     returns once nothing of the command's session is left, and a
//     command that cannot start gives 127 or 126 in Wait. On Windows
//     cmd.ExtraFiles are refused (ErrExtraFiles), as os/exec refuses
//     them there.
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
