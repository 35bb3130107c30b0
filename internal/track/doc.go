// Package track is the tracker: which processes belong to a session, by
// what scans of all processes show, without help from the kernel. A
// Tracker (New) is given each scan (Update, with proc.Scan's entries) and
// keeps the members by PID and start time, admitting a process by its
// member parent, its member-led process group or session, or the
// session's tag (TagReader); with --allow-daemons it asks Daemon of each
// new process and spares what that lets go (daemon.Verdict, Spared,
// Release).
// On macOS two more reads name members whatever their parent, group,
// session or environment became: Lineage (lineage.go), the kernel's
// record of each process's parent at fork (unique IDs), and Marker
// (marker.go), a pipe end COMMAND is given that its descendants inherit;
// both are decisions over plain values that proc's darwin files read,
// and the Tracker applies both where it is given the reads (UniqueIDs,
// LineageReader; Marker).
// Untold, over one scan, lists what no tracking can tell: the user's
// processes that started during a session, whose parent is gone and
// whose environment cannot show a tag (Untellable; for contain run's
// report and reap's FindUnsure).
//
// It is the portable core of macOS's containment, of Linux's without a
// cgroup, and of the crash guard's search after a crash. Only the reads
// it is handed are per OS: the tag and the owner of a process on Linux
// and macOS (tagreader_unix.go, owner_unix.go; untold.go is built there
// only); Windows, whose job object holds the session, does not track
// (owner_other.go).
//
// It does not scan (the caller passes what proc.Scan read), read an
// environment (proc.EnvUntellable), signal or end anything (internal/reap
// does), and it holds no kernel containment (internal/cgroup,
// internal/job).
package track
