// Package guard is contain run's crash guard: a process that ends the
// session if contain dies without closing it (SIGKILL, the OOM killer).
// contain starts it before COMMAND (Start) and tells it, over a pipe only
// contain holds open, what it guards (Guard's methods; Orders); the pipe's
// EOF is contain's death, and the guard (Main, run as `contain __guard`)
// then ends what is left (Reap) and writes the report. The shim (Linux),
// which outlives contain above COMMAND, closes the session the same way.
package guard
