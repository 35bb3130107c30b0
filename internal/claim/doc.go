// Package claim is how contain run -d tells the run it is inside of the
// daemon it started, so that a run with --allow-daemons spares it even
// when its environment cannot be read: the words (pure, tested and fuzzed
// on every OS) and, on Linux, the abstract socket, the checks of the peer
// (claim_linux.go says what is checked and why), the run's Server and
// contain run -d's side (Daemon). macOS has no abstract sockets: there a
// daemon is judged by its environment alone.
package claim
