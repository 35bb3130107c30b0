package ports

import (
	"github.com/contain-cli/contain/internal/proc"
)

// Listening reads what each of pids listens on (proc.Listeners): macOS
// answers for contain's own user's processes (root: every process).
func Listening(pids []int) Reading {
	var r Reading
	for _, pid := range pids {
		ls, err := proc.Listeners(pid)
		if err != nil {
			r.unknown(pid, why(err))
			continue
		}
		r.set(pid, fromMac(ls))
	}
	return r
}

func fromMac(ls []proc.MacListener) []Port {
	out := make([]Port, 0, len(ls))
	for _, l := range ls {
		out = append(out, Port{Proto: l.Proto, Addr: l.Addr, Port: l.Port})
	}
	return out
}

// Holders finds the processes that listen on port n among those whose
// sockets macOS shows contain (its own user's; root: every process).
// Another user's listener is not seen at all: macOS has no table of
// sockets with their processes that a user may read.
func Holders(n uint16) ([]Holder, error) {
	entries, err := proc.Scan()
	if err != nil {
		return nil, err
	}
	var out []Holder
	for _, e := range entries {
		if e.Zombie || e.PID <= 0 {
			continue
		}
		ls, err := proc.Listeners(e.PID)
		if err != nil {
			continue
		}
		for _, p := range fromMac(ls) {
			if p.Port == n {
				out = append(out, Holder{PID: e.PID, Port: p})
			}
		}
	}
	return out, nil
}
