//go:build linux || darwin

package run

import (
	"fmt"
	"strings"

	"github.com/contain-cli/contain/internal/ports"
	"github.com/contain-cli/contain/internal/proc"
)

// readPorts reads what the members among ms that were not read yet
// listen on, once each: the leftovers, at the close, so that the report,
// -v and the leftover line name the ports they held (a dev server's
// :3000). Nothing is read before the close, nor when nothing is left.
func (r *runner) readPorts(ms []member) {
	var pids []int
	var ids []proc.ID
	for _, m := range ms {
		id := proc.ID{PID: m.pid, Start: m.start}
		if r.portsRead[id] {
			continue
		}
		if r.portsRead == nil {
			r.portsRead = map[proc.ID]bool{}
			r.leftPorts = map[proc.ID][]ports.Port{}
			r.portsWhy = map[proc.ID]string{}
		}
		r.portsRead[id] = true
		pids, ids = append(pids, m.pid), append(ids, id)
	}
	if len(pids) == 0 {
		return
	}
	read := ports.Listening(pids)
	for i, pid := range pids {
		switch p, ok := read.Known(pid); {
		case !ok:
			r.portsWhy[ids[i]] = read.Unknown[pid]
		case len(p) > 0:
			r.leftPorts[ids[i]] = p
		}
	}
}

// listening says what m listened on when it was read, for the log
// lines: ", listening on :3000" ("" when nothing).
func (r *runner) listening(m member) string {
	p := r.leftPorts[proc.ID{PID: m.pid, Start: m.start}]
	if len(p) == 0 {
		return ""
	}
	return ", listening on " + strings.Join(ports.Words(p), ", ")
}

// leftoverName is how the leftover line names m: its name, and where it
// listened, its PID and ports ("node (PID 1234, listening on :3000)").
func (r *runner) leftoverName(m member) string {
	if l := r.listening(m); l != "" {
		return fmt.Sprintf("%s (PID %d%s)", m.comm, m.pid, l)
	}
	return m.comm
}
