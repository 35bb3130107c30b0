package run

import (
	"fmt"
	"strings"

	"github.com/contain-cli/contain/internal/ports"
	"github.com/contain-cli/contain/report"
)

// leftoverPorts is what each leftover listened on, read once for each
// (K: its identity, proc.ID, or its PID on Windows), at the close, so
// that the report, -v and the leftover line name the ports it held (a dev
// server's :3000). Nothing is read before the close, nor when nothing is
// left. A leftover that is in it was read.
type leftoverPorts[K comparable] map[K]heldPorts

// heldPorts is one leftover's: its ports, or why they were not read.
type heldPorts struct {
	ports []ports.Port
	why   string
}

// read reads the ports of the processes among pids (keys: their keys,
// the same order) not read yet, in one ports.Listening.
func (l *leftoverPorts[K]) read(keys []K, pids []int) {
	var need []int
	var needKeys []K
	for i, k := range keys {
		if _, ok := (*l)[k]; !ok {
			need, needKeys = append(need, pids[i]), append(needKeys, k)
		}
	}
	if len(need) == 0 {
		return
	}
	if *l == nil {
		*l = leftoverPorts[K]{}
	}
	got := ports.Listening(need)
	for i, pid := range need {
		p, ok := got.Known(pid)
		if !ok {
			(*l)[needKeys[i]] = heldPorts{why: got.Unknown[pid]}
		} else {
			(*l)[needKeys[i]] = heldPorts{ports: p}
		}
	}
}

// listening says what k listened on, for the log lines: ", listening on
// :3000" ("" when nothing).
func (l leftoverPorts[K]) listening(k K) string {
	if p := l[k].ports; len(p) > 0 {
		return ", listening on " + strings.Join(ports.Words(p), ", ")
	}
	return ""
}

// named is how the leftover line names a leftover: its name and, where
// it listened, its PID and ports ("node (PID 1234, listening on :3000)").
func (l leftoverPorts[K]) named(k K, name string, pid int) string {
	if w := l.listening(k); w != "" {
		return fmt.Sprintf("%s (PID %d%s)", name, pid, w)
	}
	return name
}

// note puts k's ports in its report entry: the ports, or, where they
// could not be read, why, in its absent fields.
func (l leftoverPorts[K]) note(k K, out *report.Leftover) {
	h := l[k]
	switch {
	case len(h.ports) > 0:
		out.Ports = ports.ToJSON(h.ports)
	case h.why != "":
		if out.Absent == nil {
			out.Absent = map[string]string{}
		}
		out.Absent["ports"] = h.why
	}
}
