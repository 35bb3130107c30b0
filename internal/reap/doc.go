// Package reap ends processes safely: every signal through a pin, so that
// a PID reused meanwhile is never hit. Reap carries out a Plan (plan.go)
// and returns a Report; its steps are the same on every OS (reap.go):
// pin, stop the session, signal, wait the grace period, kill, and rescan
// for what was started meanwhile. contain reap, stop --kill, the crash
// guard and the shim all use it.
//
// It also decides and finds what reap may touch: Me and Choose (which
// sessions this contain may act on), Look and the Survey (what contain
// reap and containment.Reap find before they act), the processes that the
// registries of ended runs name (ListForReap; the file itself is
// internal/registry's), and the processes it could not tell (FindUnsure).
//
// Per OS only the targets and the pins differ (reap_*.go): on Linux
// pidfds in batches that fit the descriptor limit, and the frozen
// leftover cgroups of dead runs; on macOS a re-check of each process
// before each signal; on Windows process handles. Windows keeps no
// registry: a job object ends its session whatever ends contain. Other
// OSes kill nothing and say so (reap_other.go).
//
// It does not read processes itself (internal/proc), decide membership
// (internal/track) or select sessions (package session's Select).
package reap
