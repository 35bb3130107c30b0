//go:build linux

package tests

// Ports: ps shows what each process listens on and who holds a port;
// stop and reap --port act on a tagged holder's session only; the report,
// -v and the leftover line name what each leftover listened on. Real
// listeners on ports the kernel picks (testdata/listen), IPv4 and IPv6,
// TCP and UDP, as root and as nobody.

import (
	"encoding/json"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/contain-cli/contain/internal/testtool"
	"github.com/contain-cli/contain/report"
)

type reportPort = report.Port

var listenFix builtOnce

// listenBin is testdata/listen, built once, where nobody can run it.
func listenBin(t *testing.T) string {
	return listenFix.path(t, "listen", ".", "./testdata/listen")
}

// listened is one socket testdata/listen wrote it listens on.
type listened struct {
	proto, addr string
	port        int
}

// word is how ps and the log lines say it.
func (l listened) word() string {
	w := ":" + strconv.Itoa(l.port)
	switch l.addr {
	case "0.0.0.0", "::":
	case "::1":
		w = "[::1]" + w
	default:
		w = l.addr + w
	}
	if l.proto == "udp" {
		w += "/udp"
	}
	return w
}

// socketKinds are the sockets to ask testdata/listen for: IPv6 too where
// this machine has it.
func socketKinds(t *testing.T) []string {
	kinds := []string{"tcp4", "udp4"}
	if l, err := net.Listen("tcp6", "[::1]:0"); err == nil {
		l.Close()
		kinds = append(kinds, "tcp6", "udp6")
	} else {
		t.Logf("no IPv6 here (%v): IPv4 only", err)
	}
	return kinds
}

// readListened waits for testdata/listen's file and reads it.
func readListened(t *testing.T, file string) []listened {
	t.Helper()
	var b []byte
	waitFor(t, "the listener to write its ports", 20*time.Second, func() bool {
		var err error
		b, err = os.ReadFile(file)
		return err == nil && len(b) > 0
	})
	var out []listened
	for _, line := range strings.Split(strings.TrimSpace(string(b)), "\n") {
		f := strings.Fields(line)
		port, err := strconv.Atoi(f[2])
		if len(f) != 3 || err != nil {
			t.Fatalf("bad line from the listener: %q", line)
		}
		out = append(out, listened{f[0], f[1], port})
	}
	return out
}

// psPorts is the part of ps's JSON that says ports.
type psPorts struct {
	Sessions []struct {
		Originator struct {
			Value string `json:"value"`
		} `json:"originator"`
		Processes []struct {
			PID   int      `json:"pid"`
			Argv  []string `json:"argv"`
			Ports []struct {
				Proto   string `json:"proto"`
				Address string `json:"address"`
				Port    int    `json:"port"`
			} `json:"ports"`
			PortsAbsent string `json:"ports_absent"`
		} `json:"processes"`
	} `json:"sessions"`
}

// TestPortsPsAndStop: a session's listener shows its ports in ps (the
// column and the JSON field), ps --port names its session, state and
// process, and stop --port ends that session.
func TestPortsPsAndStop(t *testing.T) {
	t.Parallel()
	for _, who := range []string{"root", "nobody"} {
		t.Run(who, func(t *testing.T) {
			t.Parallel()
			o := runOpts{asNobody: who == "nobody"}
			file := filepath.Join(sharedDir(t), "ports")
			tool := uniqueTool(t)
			_, wait := startContain(t, o, append([]string{"run", "-o", tool, "--", listenBin(t), file}, socketKinds(t)...)...)
			want := readListened(t, file)

			res := run(t, o, "ps", "-o", tool, "--format", "json")
			wantCode(t, res, 0)
			var out psPorts
			if err := json.Unmarshal([]byte(res.stdout), &out); err != nil || len(out.Sessions) != 1 || len(out.Sessions[0].Processes) != 1 {
				t.Fatalf("ps: %v\n%s", err, res.stdout)
			}
			value, listener := out.Sessions[0].Originator.Value, out.Sessions[0].Processes[0]
			var got []listened
			for _, p := range listener.Ports {
				got = append(got, listened{p.Proto, p.Address, p.Port})
			}
			for _, w := range want {
				if !slices.Contains(got, w) {
					t.Errorf("ps JSON: process %d listens on %v, not on %v (%s)", listener.PID, got, w, listener.PortsAbsent)
				}
			}
			if len(got) != len(want) {
				t.Errorf("ps JSON: ports %v, want exactly %v", got, want)
			}
			res = run(t, o, "ps", "-o", tool)
			wantCode(t, res, 0)
			row := ""
			for _, line := range strings.Split(res.stdout, "\n") {
				if strings.Contains(line, " "+strconv.Itoa(listener.PID)+" ") {
					row = line
				}
			}
			if !strings.Contains(res.stdout, " PORTS ") {
				t.Errorf("ps: no PORTS column:\n%s", res.stdout)
			}
			for _, w := range want {
				if !strings.Contains(row, w.word()) {
					t.Errorf("ps: the listener's row does not show %s:\n%s", w.word(), row)
				}
			}

			// Who holds each port: the session, alive, and the process.
			for _, w := range want {
				res = run(t, o, "ps", "--port", strconv.Itoa(w.port))
				wantCode(t, res, 0)
				if !strings.Contains(res.stdout, value) || !strings.Contains(res.stdout, " alive ") || !strings.Contains(res.stdout, strconv.Itoa(listener.PID)) {
					t.Errorf("ps --port %d:\n%s", w.port, res.stdout)
				}
			}
			res = run(t, o, "ps", "--port", strconv.Itoa(want[0].port), "--format", "json")
			wantCode(t, res, 0)
			var held struct {
				Port    int `json:"port"`
				Holders []struct {
					PID     int  `json:"pid"`
					Tagged  bool `json:"tagged"`
					Session struct {
						State string `json:"state"`
					} `json:"session"`
				} `json:"holders"`
			}
			if err := json.Unmarshal([]byte(res.stdout), &held); err != nil || held.Port != want[0].port || len(held.Holders) != 1 ||
				held.Holders[0].PID != listener.PID || !held.Holders[0].Tagged || held.Holders[0].Session.State != "alive" {
				t.Errorf("ps --port --format json: %v\n%s", err, res.stdout)
			}

			// stop --port ends the session that holds it.
			res = run(t, o, "stop", "--port", strconv.Itoa(want[len(want)-1].port), "-t", "30s")
			wantCode(t, res, 0)
			if r := wait(); r.code != 143 && r.code != 0 {
				t.Errorf("contain run after stop --port: exit %d\n%s", r.code, r.stderr)
			}
			waitFor(t, "the listener to end", 10*time.Second, func() bool { return !alive(listener.PID) })
		})
	}
}

// TestPortsUntaggedHolder: a port held by a process that carries no tag
// is named, with exit 1, and stop and reap --port refuse it without
// signalling anything; another user's holder is said to be unseen as an
// ordinary user; a port nothing holds, or no port at all, is said so.
func TestPortsUntaggedHolder(t *testing.T) {
	t.Parallel()
	file := filepath.Join(sharedDir(t), "ports")
	holder := startAs(t, false, withoutTag(os.Environ()), listenBin(t), file, "tcp4")
	port := strconv.Itoa(readListened(t, file)[0].port)

	res := run(t, runOpts{}, "ps", "--port", port)
	wantCode(t, res, 1)
	if !strings.Contains(res.stderr, fmt.Sprintf("PID %d (listen)", holder)) || !strings.Contains(res.stderr, "carries no RUNNING_PROCESS_ORIGINATOR") {
		t.Errorf("ps --port of an untagged holder:\n%s", res.stderr)
	}
	for _, cmd := range []string{"stop", "reap"} {
		res = run(t, runOpts{}, cmd, "--port", port)
		wantCode(t, res, 1)
		if lines := strings.Split(strings.TrimSpace(res.stderr), "\n"); len(lines) != 1 || !strings.Contains(res.stderr, "nothing was signalled") {
			t.Errorf("%s --port of an untagged holder: want one line:\n%s", cmd, res.stderr)
		}
		if !alive(holder) {
			t.Fatalf("%s --port ended the untagged holder %d", cmd, holder)
		}
	}
	// As nobody, root's socket has no process nobody may see.
	res = run(t, runOpts{asNobody: true}, "ps", "--port", port)
	wantCode(t, res, 1)
	if !strings.Contains(res.stderr, "cannot see") || strings.Contains(res.stderr, strconv.Itoa(holder)) {
		t.Errorf("ps --port as nobody, of root's listener:\n%s", res.stderr)
	}
	res = run(t, runOpts{asNobody: true}, "stop", "--port", port)
	wantCode(t, res, 1)

	// A port nothing listens on, and bad ports.
	l, err := net.Listen("tcp4", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	free := strconv.Itoa(l.Addr().(*net.TCPAddr).Port)
	l.Close()
	res = run(t, runOpts{}, "ps", "--port", free)
	wantCode(t, res, 1)
	if !strings.Contains(res.stderr, "nothing listens on port "+free) {
		t.Errorf("ps --port of a free port:\n%s", res.stderr)
	}
	for _, bad := range []string{"0", "65536", "x", "-1"} {
		for _, cmd := range []string{"ps", "stop", "reap"} {
			res = run(t, runOpts{}, cmd, "--port="+bad)
			wantCode(t, res, 2)
			if lines := strings.Split(strings.TrimSpace(res.stderr), "\n"); len(lines) != 1 || !strings.HasPrefix(res.stderr, "contain: "+cmd+": ") {
				t.Errorf("%s --port=%s: want one line:\n%s", cmd, bad, res.stderr)
			}
		}
	}
}

// TestPortsReap: reap --port ends the orphaned session that holds the
// port, as root and as nobody, and leaves a live one alone.
func TestPortsReap(t *testing.T) {
	t.Parallel()
	for _, who := range []string{"root", "nobody"} {
		t.Run(who, func(t *testing.T) {
			t.Parallel()
			o := runOpts{asNobody: who == "nobody"}
			tool := uniqueTool(t)
			file := filepath.Join(sharedDir(t), "orphan")
			orphan := startTagged(t, fmt.Sprintf("%s:%d", tool, deadPID(t)), procOpts{nobody: o.asNobody}, listenBin(t), file, "tcp4", "udp4")
			ports := readListened(t, file)

			liveFile := filepath.Join(sharedDir(t), "live")
			_, wait := startContain(t, o, "run", "-o", tool, "--", listenBin(t), liveFile, "tcp4")
			live := readListened(t, liveFile)
			res := run(t, o, "reap", "--port", strconv.Itoa(live[0].port))
			wantCode(t, res, 0)
			if !strings.Contains(res.stdout, "left alone") {
				t.Errorf("reap --port of a live session's port:\n%s%s", res.stdout, res.stderr)
			}

			res = run(t, o, "reap", "--port", strconv.Itoa(ports[1].port), "-g", "5s", "--format", "json")
			wantCode(t, res, 0)
			var reaped struct {
				Processes []struct {
					PID    int          `json:"pid"`
					Result string       `json:"result"`
					Ports  []reportPort `json:"ports"`
				} `json:"processes"`
			}
			if err := json.Unmarshal([]byte(res.stdout), &reaped); err != nil || len(reaped.Processes) != 1 || reaped.Processes[0].PID != orphan || len(reaped.Processes[0].Ports) != 2 {
				t.Errorf("reap --port --format json: %v\n%s", err, res.stdout)
			}
			waitFor(t, "the orphaned listener to end", 10*time.Second, func() bool { return !alive(orphan) })
			res = run(t, o, "stop", "--port", strconv.Itoa(live[0].port), "-t", "30s")
			wantCode(t, res, 0)
			wait()
		})
	}
}

// TestPortsLeftovers: what COMMAND left listening is named with its
// ports, in -v's lines, the leftover line and the report.
func TestPortsLeftovers(t *testing.T) {
	t.Parallel()
	for _, who := range []string{"root", "nobody"} {
		t.Run(who, func(t *testing.T) {
			t.Parallel()
			o := runOpts{asNobody: who == "nobody"}
			dir := sharedDir(t)
			file, rep := filepath.Join(dir, "ports"), filepath.Join(dir, "report.json")
			script := fmt.Sprintf("%s %s tcp4 udp4 & while [ ! -s %s ]; do sleep 0.01; done", listenBin(t), file, file)
			evs := filepath.Join(dir, "events")
			res := run(t, o, "run", "--report", rep, "--events", evs, "--", "sh", "-c", script)
			wantCode(t, res, 0)
			want := readListened(t, file)
			// The event stream's leftover line names them too.
			b, _ := os.ReadFile(evs)
			var seen bool
			for _, line := range strings.Split(strings.TrimSpace(string(b)), "\n") {
				var e struct {
					Kind  string       `json:"kind"`
					Comm  string       `json:"comm"`
					Ports []reportPort `json:"ports"`
				}
				if json.Unmarshal([]byte(line), &e) == nil && e.Kind == "leftover" && e.Comm == "listen" && len(e.Ports) == 2 {
					seen = true
				}
			}
			if !seen {
				t.Errorf("no leftover event names the listener's two ports:\n%s", b)
			}
			words := want[0].word() + ", " + want[1].word()
			if want[1].port < want[0].port {
				words = want[1].word() + ", " + want[0].word()
			}
			if !strings.Contains(res.stderr, "(PID ") || !strings.Contains(res.stderr, "listen (PID") || !strings.Contains(res.stderr, "listening on "+words+")") {
				t.Errorf("the leftover line does not name the ports %s:\n%s", words, res.stderr)
			}
			r := readReport(t, rep)
			if len(r.Leftovers) != 1 || len(r.Leftovers[0].Ports) != 2 {
				t.Fatalf("report leftovers: %+v", r.Leftovers)
			}
			for _, w := range want {
				if !slices.ContainsFunc(r.Leftovers[0].Ports, func(p reportPort) bool { return p.Proto == w.proto && p.Address == w.addr && int(p.Port) == w.port }) {
					t.Errorf("report: leftover ports %+v, without %v", r.Leftovers[0].Ports, w)
				}
			}

			os.Remove(file)
			res = run(t, o, "run", "-v", "--", "sh", "-c", script)
			wantCode(t, res, 0)
			want = readListened(t, file)
			if !strings.Contains(res.stderr, "(listen, listening on ") || !strings.Contains(res.stderr, want[0].word()) {
				t.Errorf("-v does not name the leftover's ports:\n%s", res.stderr)
			}
		})
	}
}

// TestPortsPIDNamespace: stop --port from the host acts on the session
// of the namespace's listener, which the host sees as TOOL:1@pidns:N,
// and on no host session that carries the same value TOOL:1 (a tag is a
// claim: here a process of the host's, whose PID 1 runs).
func TestPortsPIDNamespace(t *testing.T) {
	requireRoot(t, "a PID namespace (unshare --pid)")
	testtool.Need(t, "unshare", "util-linux")
	t.Parallel()
	tool := uniqueTool(t)
	dir := sharedDir(t)
	file := filepath.Join(dir, "ports")
	inNamespace(t, runOpts{}, fmt.Sprintf("exec %s run -o %s -- %s %s tcp4", bin, tool, listenBin(t), file))
	port := strconv.Itoa(readListened(t, file)[0].port)
	forged := startTagged(t, tool+":1", procOpts{})

	res := run(t, runOpts{}, "ps", "--port", port)
	wantCode(t, res, 0)
	if !regexp.MustCompile(` ` + tool + `:1@pidns:\d+ +alive `).MatchString(res.stdout) {
		t.Errorf("ps --port from the host does not name the namespace's session:\n%s", res.stdout)
	}
	res = run(t, runOpts{}, "stop", "--port", port, "-t", "30s", "--format", "json")
	wantCode(t, res, 0)
	var out struct {
		Sessions []struct {
			Result string `json:"result"`
		} `json:"sessions"`
	}
	if err := json.Unmarshal([]byte(res.stdout), &out); err != nil || len(out.Sessions) != 1 || !strings.Contains(out.Sessions[0].Result, "of PID namespace") {
		t.Errorf("stop --port: %v, want the namespace's session alone:\n%s%s", err, res.stdout, res.stderr)
	}
	if !alive(forged) {
		t.Errorf("the host's process %d that carries %s:1 was ended", forged, tool)
	}
}

// TestPortsForgedTag: a process of nobody's that carries the value of a
// live session of root's and listens on a port does not make that
// session the port's: root's ps --port says whose it is, and stop --port
// refuses it, asking no one (the session runs on, the holder too).
func TestPortsForgedTag(t *testing.T) {
	requireRoot(t, "a session of root's beside a process of nobody's")
	t.Parallel()
	tool := uniqueTool(t)
	cmd, wait := startContain(t, runOpts{}, "run", "-o", tool, "--", "sleep", "300")
	value := fmt.Sprintf("%s:%d", tool, cmd.Process.Pid)
	waitFor(t, "the session's sleep", 10*time.Second, func() bool { return len(tagged(value)) > 0 })
	file := filepath.Join(sharedDir(t), "ports")
	forger := startTagged(t, value, procOpts{nobody: true}, listenBin(t), file, "tcp4")
	port := strconv.Itoa(readListened(t, file)[0].port)

	res := run(t, runOpts{}, "ps", "--port", port)
	wantCode(t, res, 1)
	if !strings.Contains(res.stderr, fmt.Sprintf("held by PID %d (listen), another user's (nobody) than the originator of the session %s", forger, value)) {
		t.Errorf("ps --port of a forged holder:\n%s%s", res.stdout, res.stderr)
	}
	// In JSON: no session's, and the session it claims.
	res = run(t, runOpts{}, "ps", "--port", port, "--format", "json")
	wantCode(t, res, 1)
	var held struct {
		Holders []struct {
			PID     int             `json:"pid"`
			Tagged  bool            `json:"tagged"`
			Claims  string          `json:"claims"`
			Session json.RawMessage `json:"session"`
		} `json:"holders"`
	}
	if err := json.Unmarshal([]byte(res.stdout), &held); err != nil || len(held.Holders) != 1 || held.Holders[0].PID != forger ||
		held.Holders[0].Tagged || held.Holders[0].Claims != value || string(held.Holders[0].Session) != "null" {
		t.Errorf("ps --port --format json of a forged holder: %v\n%s", err, res.stdout)
	}
	res = run(t, runOpts{}, "stop", "--port", port, "-t", "5s")
	wantCode(t, res, 1)
	if !strings.Contains(res.stderr, "nothing was signalled") {
		t.Errorf("stop --port of a forged holder:\n%s", res.stderr)
	}
	if !alive(cmd.Process.Pid) || !alive(forger) {
		t.Fatalf("stop --port ended the session %s (contain alive: %t) or the holder (alive: %t)", value, alive(cmd.Process.Pid), alive(forger))
	}
	cmd.Process.Signal(syscall.SIGTERM)
	wait()
}
