// Package builtin holds the two programs contain runs without a Go
// runtime, as machine code for linux/amd64: the crash guard's waiter and
// the shim's keeper (testdata/*_amd64.S). A Go program's start (its
// runtime, its threads) costs more than contain run -- true itself; these
// start in a tenth of a millisecond, and become contain (`contain __guard`,
// `contain __shim keeper`) only when contain has died. contain writes one
// to a memfd and executes it from there (Load), so that nothing on disk is
// trusted or needed. Where there is no code for the machine (Available),
// or the kernel will not execute a memfd, the callers fall back to
// /bin/sh and to the shim as a Go program.
package builtin
