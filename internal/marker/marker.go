// Package marker is a session's marker descriptor: one end of a pipe that
// COMMAND inherits at descriptor FD, and every process it starts after it,
// unless it closes it. Whatever a process does to its lineage (setsid, a
// double fork), its title or its environment (env -i), while it holds the
// marker it is the session's: the pipe is the same object in every holder,
// and no other process can come by it unless a holder hands it over.
//
// contain places the marker where no cgroup holds the session (an ordinary
// user: the shim and the tracking), records its identity in the session's
// registry, and contain reap finds every holder of it after contain, its
// crash guard and its shim were all killed. What drops it (a program that
// closes every descriptor: ssh-agent, sudo, Python's subprocess) is found
// as before, by its tag, its lineage and the registry, or named as a
// process reap could not tell.
package marker

// FD is where COMMAND finds the marker: high, away from the descriptors
// programs use by convention (0-2, systemd's 3 on, shells' 10 on, bash's
// 255), and below 256, macOS's default limit of open files.
const FD = 205

// fits reports whether a process with this limit of open files can hold
// a descriptor at FD: where it cannot (ulimit -n 200), no marker is
// placed, and COMMAND starts as before. A margin above FD: Go's fork moves
// its own descriptors above the table it is given (Files) before it puts
// them in place, and a move that the limit refuses fails the start.
func fits(limit uint64) bool { return limit >= FD+16 }
