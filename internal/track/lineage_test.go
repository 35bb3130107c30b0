package track

import (
	"fmt"
	"maps"
	"slices"
	"testing"

	"github.com/contain-cli/contain/internal/proc"
)

// macSession is a session on the fake kernel as the tracker would keep
// it: Lineage given COMMAND at its start, and a scan whenever the test
// says the kqueue woke one.
type macSession struct {
	k     *fakeMac
	lin   *Lineage
	cmd   int
	guard int // contain's crash guard: forked by contain, no member
	mark  Marker
	found map[int]string // PID → how Lineage found it
}

func newMacSession(t *testing.T, v macOS) *macSession {
	k := newFakeMac(t, v)
	cmd, mark := k.startCommand()
	s := &macSession{k: k, lin: NewLineage(), cmd: cmd, mark: mark, found: map[int]string{}}
	s.lin.Add(k.ids(cmd))
	// Strangers, which nothing may take: a daemon of launchd's, and
	// contain's crash guard, forked by contain and no descendant of
	// COMMAND.
	k.fork(fmLaunchd)
	s.guard = k.fork(fmContain)
	return s
}

// scan runs Lineage over a scan and returns the PIDs it found this time.
func (s *macSession) scan() []int {
	var pids []int
	for _, d := range s.lin.Descendants(s.k.scan()) {
		if _, again := s.found[d.PID]; again {
			s.k.t.Errorf("PID %d found twice", d.PID)
		}
		s.found[d.PID] = d.By
		pids = append(pids, d.PID)
	}
	return pids
}

// want checks that exactly pids were found by lineage so far, each the
// way by says (by[i] for pids[i]).
func (s *macSession) want(t *testing.T, pids []int, by []string) {
	t.Helper()
	want := map[int]string{}
	for i, pid := range pids {
		want[pid] = by[i]
	}
	if !maps.Equal(s.found, want) {
		t.Errorf("lineage found %v, want %v", s.found, want)
	}
}

var versions = []macOS{macOS12, macOS13, macOS154}

func (v macOS) String() string { return [...]string{"macOS 12", "macOS 13-15.3", "macOS 15.4"}[v] }

// TestLineageRedisDaemonize: redis-server --daemonize yes, started by a
// shell: it forks, the parent exits, the child calls setsid, points its
// standard descriptors at /dev/null and writes its title over its
// arguments and environment (the tag is gone). Re-parented to launchd, in
// a session and group of its own, untagged: the tracker's rules of
// parent, group, session and tag have nothing left to find it by. Its
// parent at fork was seen, and that is enough, on every macOS.
func TestLineageRedisDaemonize(t *testing.T) {
	for _, v := range versions {
		t.Run(v.String(), func(t *testing.T) {
			s := newMacSession(t, v)
			k := s.k
			r := k.fork(s.cmd) // the shell starts redis-server
			if got := s.scan(); !slices.Equal(got, []int{r}) {
				t.Errorf("the scan at the fork found %v, want [%d]", got, r)
			}
			k.exec(r)
			d := k.fork(r) // daemonize(): fork, the parent exits
			k.exitReaped(r)
			k.procs[d].tagged = false // its title, written over the environment
			if k.procs[d].ppid != fmLaunchd || k.procs[d].tagged {
				t.Fatalf("fake kernel: the daemon has PPID %d, tagged %v", k.procs[d].ppid, k.procs[d].tagged)
			}
			s.scan()
			s.want(t, []int{r, d}, []string{ByParent, ByParent})
		})
	}
}

// TestLineageNginxDaemon: nginx's ngx_daemon forks, the parent exits, the
// master calls setsid and forks its workers, all between two scans, with
// PIDs that wrap past 99998 meanwhile. One scan finds the master and its
// workers: the pass goes in the order of the forks, whatever the order
// of PIDs, or of the scan (newest first).
func TestLineageNginxDaemon(t *testing.T) {
	for _, v := range versions {
		t.Run(v.String(), func(t *testing.T) {
			s := newMacSession(t, v)
			k := s.k
			k.nextPID = 99996
			n := k.fork(s.cmd)
			s.scan() // the fork woke a scan
			k.exec(n)
			m := k.fork(n) // ngx_daemon
			k.exitReaped(n)
			w1, w2 := k.fork(m), k.fork(m) // ngx_start_worker_processes
			if !(w1 < m && w2 < m) {
				t.Fatalf("fake kernel: the workers' PIDs (%d, %d) did not wrap below the master's (%d)", w1, w2, m)
			}
			if got := s.scan(); len(got) != 3 {
				t.Errorf("one scan found %v, want the master %d and workers %d and %d", got, m, w1, w2)
			}
			s.want(t, []int{n, m, w1, w2}, []string{ByParent, ByParent, ByParent, ByParent})
		})
	}
}

// TestLineageDoubleFork: sh -c '( cmd & ) &'. The subshell forks cmd and
// exits; cmd, re-parented to launchd, executes its program then. Whether
// lineage finds it depends on whether a scan saw the subshell, and on
// macOS: from 13 the exec gives cmd launchd's unique ID as its parent, and
// only 15.4's original parent's pidversion still names the subshell.
func TestLineageDoubleFork(t *testing.T) {
	for _, c := range []struct {
		v         macOS
		seen      bool // a scan saw the subshell
		execFirst bool // cmd executes before the subshell exits
		found     string
	}{
		{macOS12, true, false, ByParent},
		{macOS13, true, true, ByParent},
		{macOS13, true, false, ""}, // the limit: launchd's unique ID, and no original parent
		{macOS154, true, false, ByOrigParent},
		{macOS154, true, true, ByParent},
		{macOS12, false, false, ""}, // the subshell came and went unseen: the marker finds cmd
		{macOS154, false, false, ""},
	} {
		t.Run(fmt.Sprintf("%v seen=%v execFirst=%v", c.v, c.seen, c.execFirst), func(t *testing.T) {
			s := newMacSession(t, c.v)
			k := s.k
			sub := k.fork(s.cmd)
			if c.seen {
				s.scan()
			}
			cmd := k.fork(sub)
			if c.execFirst {
				k.exec(cmd)
			}
			k.exit(sub)
			k.reap(sub) // by sh, or by launchd
			if !c.execFirst {
				k.exec(cmd)
			}
			if c.v >= macOS13 && !c.execFirst && k.ids(cmd).ParentUniqueID != 1 {
				t.Fatalf("fake kernel: an orphan's exec on %v gave ParentUniqueID %d, not launchd's", c.v, k.ids(cmd).ParentUniqueID)
			}
			s.scan()
			var pids []int
			var by []string
			if c.seen {
				pids, by = append(pids, sub), append(by, ByParent)
			}
			if c.found != "" {
				pids, by = append(pids, cmd), append(by, c.found)
			}
			s.want(t, pids, by)
			// Whatever lineage says, cmd holds the marker.
			if got := s.holders(); !slices.Contains(got, cmd) {
				t.Errorf("the marker's holders are %v, without cmd (%d)", got, cmd)
			}
		})
	}
}

// TestLineageEnvI: env -i sh -c 'sleep 100 & wait' runs with no
// environment at all, so no tag: every process is found by lineage,
// COMMAND by its unique ID, which its execs keep.
func TestLineageEnvI(t *testing.T) {
	for _, v := range versions {
		t.Run(v.String(), func(t *testing.T) {
			s := newMacSession(t, v)
			k := s.k
			k.execClean(s.cmd) // env -i executes sh with nothing
			sleep := k.fork(s.cmd)
			k.execClean(sleep)
			grand := k.fork(sleep) // say, a helper that sleep does not have
			s.scan()
			for _, pid := range []int{s.cmd, sleep, grand} {
				if k.procs[pid].tagged {
					t.Fatalf("fake kernel: %d is tagged", pid)
				}
			}
			s.want(t, []int{sleep, grand}, []string{ByParent, ByParent})
		})
	}
}

// TestLineageLimits: what lineage cannot see, and what it sees once a
// scan came at the right time.
func TestLineageLimits(t *testing.T) {
	// An intermediate that forked and was reaped between two scans
	// breaks the chain; seen once, it keeps it after it is gone.
	for _, seen := range []bool{false, true} {
		s := newMacSession(t, macOS154)
		k := s.k
		b := k.fork(s.cmd)
		if seen {
			s.scan()
		}
		c := k.fork(b)
		k.exitReaped(b)
		s.scan()
		if seen {
			s.want(t, []int{b, c}, []string{ByParent, ByParent})
		} else {
			s.want(t, nil, nil)
		}
	}

	// On 15.4, the original parent's pidversion is the one it had when it
	// forked: a parent that executed a program after the last scan, then
	// forked and ended, is known by none of the pidversions seen; a scan
	// after its exec knows it.
	for _, seenAfterExec := range []bool{false, true} {
		s := newMacSession(t, macOS154)
		k := s.k
		m := k.fork(s.cmd)
		s.scan()
		k.exec(m)
		if seenAfterExec {
			s.scan()
		}
		o := k.fork(m)
		k.exitReaped(m)
		k.exec(o) // an orphan now: launchd's unique ID as its parent
		s.scan()
		if seenAfterExec {
			s.want(t, []int{m, o}, []string{ByParent, ByOrigParent})
		} else {
			s.want(t, []int{m}, []string{ByParent})
		}
	}
}

// TestLineageStrangers: what lineage never takes.
func TestLineageStrangers(t *testing.T) {
	s := newMacSession(t, macOS154)
	k := s.k
	// Before 15.4 every OrigParentIDVersion is 0, and a member may be
	// known with no pidversion: 0 never matches.
	s.lin.Add(proc.MacIDs{UniqueID: 77})
	zero := k.fork(fmLaunchd)
	k.procs[zero].ids.OrigParentIDVersion = 0
	// A process whose lineage could not be read (gone meanwhile) names
	// no one, even if the parent it shows were a member's.
	scan := append(k.scan(), LineageEntry{PID: 5000, IDs: proc.MacIDs{ParentUniqueID: k.ids(s.cmd).UniqueID}})
	if got := s.lin.Descendants(scan); len(got) != 0 {
		t.Errorf("Descendants took strangers: %v", got)
	}

	// A daemon the session let go (--allow-daemons) leads no one back:
	// what it forks afterwards is not found through it.
	d := k.fork(s.cmd)
	s.scan()
	dUID := k.ids(d).UniqueID
	s.lin.Release(dUID)
	late1, late2 := k.fork(d), k.fork(d)
	k.exitReaped(d)
	k.exec(late2) // an orphan: found, if at all, by its original parent's pidversion
	_ = late1     // still names d as its parent at fork
	s.scan()
	s.want(t, []int{d}, []string{ByParent})
	if s.lin.Known(dUID) {
		t.Error("Known: a released daemon is still a member")
	}
}
