// Package shim is the small subreaper between contain run and COMMAND
// where there is no cgroup (Linux): contain itself run again as
// `contain __shim`, which starts COMMAND as contain asks (Orders), tells
// contain its stops, its end and every other process it reaped (the
// lines Started ... Reaped), and, should contain die first, closes the
// session from the top of the tree as the crash guard would
// (guard.Reap). contain's side of it is the Client (client_linux.go):
// starting one (Fork, StartKeeper, Start), briefing it, reading its
// records (Relay) and its children (Watch), telling it of the daemons
// contain spared (Spare); internal/run holds one, or none.
package shim
