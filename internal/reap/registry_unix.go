//go:build linux || darwin

package reap

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"slices"

	"github.com/contain-cli/contain/internal/marker"
	"github.com/contain-cli/contain/internal/proc"
	"github.com/contain-cli/contain/internal/procfs"
	"github.com/contain-cli/contain/internal/registry"
	"github.com/contain-cli/contain/internal/track"
	"github.com/contain-cli/contain/session"
	"github.com/contain-cli/contain/tag"
)

// envRead is what a process's environment says of sessions.
type envRead struct {
	readable bool   // read, and not written over by a title
	tagged   bool   // it carries the tag
	value    string // the tag's value
	daemon   bool   // RUNNING_PROCESS_IS_DAEMON=1
}

// envFrom reads an environ block as /proc gives it (NUL-terminated
// entries).
func envFrom(env []byte) envRead {
	if procfs.Overwritten(env) {
		return envRead{}
	}
	value, ok := procfs.Getenv(env, tag.Var)
	daemon, _ := procfs.Getenv(env, tag.DaemonVar)
	return envRead{readable: true, tagged: ok, value: value, daemon: daemon == "1"}
}

// registeredCheck is what reap checks of a process found through a
// registry, through its pin, besides its PID and start time: that it has
// not since taken another session's tag (an exec).
func registeredCheck(env envRead, value string) error {
	if env.tagged && env.value != value {
		return fmt.Errorf("it now carries another session's tag %q", env.value)
	}
	return nil
}

// registered lists what the registries of this user name of sessions
// whose contain run has ended: each process listed that still runs (the
// same PID and start time) and, by parentage, the processes those started
// since, with the session's value as their tag and Registered set.
// Processes in known (found by their tag) are not listed again. A process
// that carries another session's tag, the originator of a live session
// (live, and the contain runs whose registries show them running), and
// what those started (a nested contain run's processes, even where the
// registry lists them), are that other session's: neither listed nor
// followed. A daemon's children count as daemons, and so does a process the
// registry lists as spared (--allow-daemons).
func registered(known []session.Process, live map[int]string) ([]session.Process, error) {
	regs, err := registry.Read()
	if len(regs) == 0 {
		return nil, err
	}
	stop := make(map[int]bool, len(live))
	for pid := range live {
		stop[pid] = true
	}
	var orphaned []registry.File
	for _, r := range regs {
		switch {
		case r.Headless:
		case registry.Alive(r):
			stop[r.Origin.PID] = true
		default:
			orphaned = append(orphaned, r)
		}
	}
	if len(orphaned) == 0 {
		return nil, err
	}
	entries, serr := proc.Scan()
	if serr != nil {
		return nil, errors.Join(err, serr)
	}
	var holders map[string][]int
	if slices.ContainsFunc(orphaned, func(r registry.File) bool { return r.Marker != 0 || len(r.Lineage) > 0 }) {
		own := ownProcesses(entries, proc.UIDOf)
		holders = markerHolders(orphaned, own, marker.Pipes)
		for value, pids := range lineageHolders(orphaned, own, track.LineageReader()) {
			if holders == nil {
				holders = map[string][]int{}
			}
			holders[value] = append(holders[value], pids...)
		}
	}
	return walkRegistered(orphaned, entries, known, stop, envOf, describeEntry, holders), err
}

// ownProcesses are the live processes of entries that are this user's,
// reap aside: the only ones a marker or a lineage makes the session's
// (whoever else holds it got it from the session, and is not reap's to
// signal). Each one's owner is read once, uidOf being proc.UIDOf.
func ownProcesses(entries []proc.Entry, uidOf func(int) (int, error)) []proc.Entry {
	euid := os.Geteuid()
	var own []proc.Entry
	for _, e := range entries {
		if e.Zombie || e.PID <= 1 || e.PID == os.Getpid() {
			continue
		}
		if uid, err := uidOf(e.PID); err == nil && uid == euid {
			own = append(own, e)
		}
	}
	return own
}

// lineageHolders finds, for each registry that keeps its members'
// lineages (macOS), the processes among own (this user's) that descend
// from one of them as the kernel's lineage says (track.Lineage): what a
// member forked, re-parented to launchd since, which no parent of the
// scan shows. read is proc.UniqueIDs (nil: the OS keeps no lineage,
// Linux: none).
func lineageHolders(orphaned []registry.File, own []proc.Entry, read func(int) (proc.MacIDs, error)) map[string][]int {
	if read == nil {
		return nil
	}
	var out map[string][]int
	var scan []track.LineageEntry
	for _, r := range orphaned {
		if len(r.Lineage) == 0 {
			continue
		}
		if scan == nil {
			for _, e := range own {
				if ids, err := read(e.PID); err == nil {
					scan = append(scan, track.LineageEntry{PID: e.PID, Start: e.Start, IDs: ids})
				}
			}
		}
		l := track.NewLineage()
		for _, ids := range r.Lineage {
			l.Add(ids)
		}
		for _, d := range l.Descendants(scan) {
			if out == nil {
				out = map[string][]int{}
			}
			out[r.Value] = append(out[r.Value], d.PID)
		}
	}
	return out
}

// markerHolders finds, for each registry that names a marker (package
// marker), the processes among own (this user's) started since its run
// that hold it, by the session's value: a process that dropped its tag
// and every link to the session (env -i setsid) still holds what COMMAND
// inherited. pipes is marker.Pipes: each process's descriptors are read
// once, whatever the number of sessions.
func markerHolders(orphaned []registry.File, own []proc.Entry, pipes func(pid int) ([]uint64, bool)) map[string][]int {
	var out map[string][]int
	read := map[int][]uint64{}
	for _, r := range orphaned {
		if r.Marker == 0 {
			continue
		}
		for _, e := range own {
			if e.Start < r.Origin.Start {
				continue
			}
			held, ok := read[e.PID]
			if !ok {
				held, _ = pipes(e.PID)
				read[e.PID] = held
			}
			if slices.Contains(held, r.Marker) {
				if out == nil {
					out = map[string][]int{}
				}
				out[r.Value] = append(out[r.Value], e.PID)
			}
		}
	}
	return out
}

// walkRegistered is registered's choice over one scan of every process:
// env reads a process's environment, describe what ps shows of it.
//
// holders are, by session, the processes that hold its marker: each is
// walked as a member the registry lists, a daemon where one of its
// ancestors is a daemon the run spared.
func walkRegistered(orphaned []registry.File, entries []proc.Entry, known []session.Process, stop map[int]bool,
	env func(pid int) envRead, describe func(proc.Entry) (session.Process, bool), holders map[string][]int) []session.Process {
	byPID := make(map[int]proc.Entry, len(entries))
	children := map[int][]proc.Entry{}
	for _, e := range entries {
		byPID[e.PID] = e
		children[e.PPID] = append(children[e.PPID], e)
	}
	isKnown := make(map[proc.ID]bool, len(known))
	for _, p := range known {
		isKnown[proc.ID{PID: p.PID, Start: p.Start}] = true
	}
	listed := map[proc.ID]bool{}
	var out []session.Process
	type step struct {
		e      proc.Entry
		daemon bool // a daemon's descendant
	}
	// inside tells whether e is in the subtree of the originator of a live
	// session started inside r's (no earlier than r's contain run): a
	// nested contain run that still runs, whose processes r's run also
	// listed. Such a process is that session's. A live originator that
	// started before r's run (an outer contain run, the subreaper that
	// adopted r's orphans) holds r's session, and does not make its
	// processes its own.
	inside := func(r registry.File, e proc.Entry) bool {
		// A scan is not one instant: parents read at different moments
		// could make a loop; no chain is longer than the scan.
		p, ok := byPID[e.PPID]
		for n := 0; ok && p.PID > 1 && n < len(entries); n++ {
			if stop[p.PID] && p.Start >= r.Origin.Start {
				return true
			}
			p, ok = byPID[p.PPID]
		}
		return false
	}
	for _, r := range orphaned {
		var queue []step
		for _, m := range r.Members {
			if e, ok := byPID[m.PID]; ok && e.Start == m.Start && !e.Zombie && !inside(r, e) {
				queue = append(queue, step{e: e, daemon: r.Spared[m]})
			}
		}
		for _, pid := range holders[r.Value] {
			if e, ok := byPID[pid]; ok && !e.Zombie && !inside(r, e) {
				queue = append(queue, step{e: e, daemon: underSpared(r, e, byPID)})
			}
		}
		visited := map[proc.ID]bool{}
		for len(queue) > 0 {
			s := queue[0]
			queue = queue[1:]
			id := proc.ID{PID: s.e.PID, Start: s.e.Start}
			if visited[id] || stop[s.e.PID] || s.e.PID <= 1 {
				continue
			}
			visited[id] = true
			ev := env(s.e.PID)
			if ev.tagged && ev.value != r.Value {
				continue // another session's
			}
			daemon := s.daemon || ev.daemon
			if !isKnown[id] && !listed[id] {
				p, ok := describe(s.e)
				if !ok {
					continue // gone
				}
				p.Value, p.Registered, p.Daemon = r.Value, true, daemon
				out = append(out, p)
				listed[id] = true
			}
			for _, c := range children[s.e.PID] {
				if !c.Zombie && c.Start >= s.e.Start {
					queue = append(queue, step{e: c, daemon: daemon})
				}
			}
		}
	}
	return out
}

// underSpared reports whether e is, or descends from, a daemon r's run
// spared (by the parents one scan shows).
func underSpared(r registry.File, e proc.Entry, byPID map[int]proc.Entry) bool {
	for n := 0; e.PID > 1 && n < len(byPID); n++ {
		if r.Spared[proc.ID{PID: e.PID, Start: e.Start}] {
			return true
		}
		p, ok := byPID[e.PPID]
		if !ok {
			return false
		}
		e = p
	}
	return false
}

// ListForReap lists the tagged processes, as ListTagged does, and adds
// what the registries of contain's own sessions name of sessions whose
// contain run has ended (Registered processes): reap finds those even
// when their environment cannot show the tag. A registry that cannot be
// read is said in Listing.Registry; the rest is used.
func ListForReap() (proc.Listing, error) {
	l, err := proc.ListTagged()
	if err != nil {
		return l, err
	}
	live := session.LiveOriginators(session.Group(l.Procs, l.Lookup))
	reg, err := registered(l.Procs, live)
	l.Procs = append(l.Procs, reg...)
	l.Registry = err
	return l, nil
}

// joinEnv makes an environ block of entries (macOS gives them split).
func joinEnv(env []string) []byte {
	var b bytes.Buffer
	for _, kv := range env {
		b.WriteString(kv)
		b.WriteByte(0)
	}
	return b.Bytes()
}
