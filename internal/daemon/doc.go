// Package daemon is daemons by consent: contain run --allow-daemons lets
// a process marked RUNNING_PROCESS_IS_DAEMON=1 leave the session and
// outlive the run (contain reap --include-daemons alone ends it later).
// The consent is the run's, given once for the whole run; the mark is
// the process's, read when contain first sees it with an environment of
// its own, and never again: a process first seen without it stays a
// member whatever it execs later.
//
// What is here, for every OS that has it:
//
//   - The mark (mark.go): what an environment says of
//     RUNNING_PROCESS_IS_DAEMON, with a digest of the whole environment,
//     read from a process (MarkOf, Linux and macOS) or given (MarkOfEnv,
//     MarkOfEnviron; Marked, as a Windows environment is read).
//   - The verdict (verdict.go, Judge): Yes, No or Undecided on a process
//     as a scan first finds it. A process whose environment is its
//     parent's (the same digest: forked, not yet exec'd) or empty (in the
//     middle of an exec) is Undecided and asked again at the next scan.
//     The tracker (internal/track) asks it and acts on it.
//   - The claim (claim.go, claim_linux.go): how contain run -d tells the
//     run it is inside of the daemon it started, so that the run spares
//     it even when its environment cannot be read (a title written over
//     it, an undumpable process). The words are pure, tested and fuzzed on
//     every OS; on Linux the run listens on an abstract socket
//     (BindClaims, ServeClaims), and contain run -d claims (Claim). Only
//     contain run -d of the very executable the run runs, a member of the
//     session, may claim, and only its own child, marked where its
//     environment still shows a tag: claim_linux.go says what is checked
//     and why.
//
// How each OS judges: Linux reads /proc/PID/environ at the tracker's
// scans, and takes claims; macOS reads kern.procargs2 at the scans, and
// has no abstract sockets, so no claims; Windows lets any process of the
// job break away (internal/job's breakaway watch) and judges, by Marked,
// each one that left: a marked one is spared, any other put back into the
// job or terminated.
//
// It does not spare anything itself: the run (internal/run, daemons_*.go)
// moves a daemon out of its cgroup, tells the crash guard and the shim,
// writes it to the registry for contain reap and to the report.
package daemon
