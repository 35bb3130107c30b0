//go:build linux || darwin

package run

import "github.com/contain-cli/contain/internal/proc"

// readPorts reads what the members among ms listen on, once each
// (leftoverPorts).
func (r *runner) readPorts(ms []member) {
	keys, pids := make([]proc.ID, len(ms)), make([]int, len(ms))
	for i, m := range ms {
		keys[i], pids[i] = proc.ID{PID: m.pid, Start: m.start}, m.pid
	}
	r.leftPorts.read(keys, pids)
}

// listening says what m listened on when it was read, for the log
// lines: ", listening on :3000" ("" when nothing).
func (r *runner) listening(m member) string {
	return r.leftPorts.listening(proc.ID{PID: m.pid, Start: m.start})
}

// leftoverName is how the leftover line names m.
func (r *runner) leftoverName(m member) string {
	return r.leftPorts.named(proc.ID{PID: m.pid, Start: m.start}, m.comm, m.pid)
}
