// Package proc is what contain knows of one process, and of all of them,
// on each OS: a process's identity (ID: its PID and start time), a scan
// of every process (Scan, Entry), the tagged ones as ps lists them
// (ListTagged, Listing), a pin that holds a process while it is signalled
// (Pin, OpenPin; OriginatorPin for contain stop), and what can be read of
// a process: its parent, user, tag, environment (FS.Environ on Linux,
// EnvOf on macOS: what internal/daemon reads the daemon mark from), CPU
// time and memory (UsageOf), on macOS its lineage and pipe descriptors
// (UniqueIDs, FDs, PipeHandles, Pipes: proc_info, decoded in
// procinfo.go), whether it ignores a signal (IgnoresSignal),
// whether its environment can show a tag (EnvUntellable), and its PID
// namespace.
//
// The portable files hold the types and the decisions over plain values;
// the OS files hold the reads. Linux reads /proc through internal/procfs
// and pins with a pidfd; macOS reads sysctl (kern.proc.all,
// kern.procargs2) and proc_info, and pins by checking the process again
// (macos.go holds its decisions with injectable fakes, tested on Linux);
// Windows reads a Toolhelp snapshot and each process's PEB, and pins
// with a process handle. The decoders of kern.procargs2 and of the PEB
// are the subpackages procargs and peb. An OS not written yet says
// ErrUnsupported (the _other files).
//
// It is not the tracker (internal/track), which decides which processes
// belong to a session and which it cannot tell (Untold); it parses no
// /proc file itself (internal/procfs: stat, status with its SigIgn line,
// environ); and it ends nothing on its own: reap's steps (internal/reap)
// and the commands call its pins.
package proc
