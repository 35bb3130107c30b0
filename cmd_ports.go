package main

// --port N: ps names who holds a port; stop and reap act on the session
// of the tagged process that holds it, and on nothing else.

import (
	"cmp"
	"fmt"
	"io"
	"slices"
	"strconv"

	"github.com/urfave/cli/v2"

	"github.com/contain-cli/contain/containment"
	"github.com/contain-cli/contain/internal/ports"
	"github.com/contain-cli/contain/internal/proc"
	"github.com/contain-cli/contain/internal/status"
	"github.com/contain-cli/contain/internal/text"
	"github.com/contain-cli/contain/session"
	"github.com/contain-cli/contain/tag"
)

// portFlag is --port N, for ps, stop and reap.
func portFlag(usage string) cli.Flag {
	return &cli.StringFlag{Name: "port", Usage: usage}
}

// portOf reads --port: 0 when it was not given.
func portOf(c *cli.Context) (uint16, error) {
	if !c.IsSet("port") {
		return 0, nil
	}
	s := c.String("port")
	n, err := strconv.ParseUint(s, 10, 16)
	if err != nil || n == 0 {
		return 0, usageOf(c, "--port %s: not a port (a number from 1 to 65535)", text.Quote(s))
	}
	return uint16(n), nil
}

// portHolder is a process that listens on the port asked for: in a
// session (tagged, or found through its run's registry), or not.
type portHolder struct {
	ports.Holder
	session *session.Session // nil: no session has it
	process session.Process
	// claims is the live session whose tag the holder carries while it
	// is another user's than the session's originator (session nil).
	claims *session.Session
}

// holdersOf finds who listens on port n, and their sessions.
func holdersOf(n uint16) ([]portHolder, error) {
	hs, err := ports.Holders(n)
	if err != nil {
		return nil, fmt.Errorf("cannot read who listens on port %d: %w", n, err)
	}
	if len(hs) == 0 {
		return nil, nil
	}
	all, err := containment.Sessions(session.Filter{})
	if err != nil {
		return nil, err
	}
	var out []portHolder
	for _, h := range hs {
		ph := portHolder{Holder: h}
		for i := range all.Sessions {
			s := &all.Sessions[i]
			if j := slices.IndexFunc(s.Processes, func(p session.Process) bool { return p.PID == h.PID }); j >= 0 && h.PID != 0 {
				ph.process = s.Processes[j]
				if o := s.Originator; s.State == session.Alive && o.Owned && !o.Owns(ph.process) {
					// A tag is a claim anyone can make: another user's
					// process that carries a live session's value is
					// none of its originator's (as stop and wait take
					// it), and does not make that session the port's.
					ph.claims = s
					break
				}
				ph.session = s
				break
			}
		}
		out = append(out, ph)
	}
	slices.SortFunc(out, func(a, b portHolder) int { return a.PID - b.PID })
	return out, nil
}

// untaggedWords says why a holder is not contain's to end, on one line.
func untaggedWords(n uint16, h portHolder) string {
	if h.PID == 0 {
		return fmt.Sprintf("port %d (%s) is held by %s", n, h.Port, ports.Unseen)
	}
	if c := h.claims; c != nil {
		return fmt.Sprintf("port %d (%s) is held by PID %d (%s), another user's (%s) than the originator of the session %s whose tag it carries: it is not that session's",
			n, h.Port, h.PID, text.Printable(proc.CommOf(h.PID)), text.Printable(cmp.Or(h.process.User, strconv.Itoa(h.process.UID))), text.Shorten(text.Printable(c.Key())))
	}
	return fmt.Sprintf("port %d (%s) is held by PID %d (%s), which carries no %s: it is not contain's to end",
		n, h.Port, h.PID, text.Printable(proc.CommOf(h.PID)), tag.Var)
}

// portHoldersJSON is `contain ps --port N --format json`.
type portHoldersJSON struct {
	Port    uint16           `json:"port"`
	Holders []portHolderJSON `json:"holders"`
}

type portHolderJSON struct {
	PID     int          `json:"pid"` // 0: a process contain cannot see
	Listens ports.JSON   `json:"listens"`
	Comm    string       `json:"comm,omitempty"`
	Tagged  bool         `json:"tagged"`  // it is a session's
	Session *sessionJSON `json:"session"` // null: no session has it
	// Claims: the live session whose tag it carries, another user's
	// process than that session's originator: it is not that session's.
	Claims string `json:"claims,omitempty"`
}

// doPsPort answers who holds port n: the session, its state and the
// process, for each holder; exit 1 when one is no session's (it says so
// and names it) or nothing listens on n.
func doPsPort(c *cli.Context, n uint16, format string) error {
	hs, err := holdersOf(n)
	if err != nil {
		return &status.Error{Code: 1, Err: err}
	}
	foreign := slices.ContainsFunc(hs, func(h portHolder) bool { return h.session == nil })
	if format == "json" {
		out := portHoldersJSON{Port: n, Holders: []portHolderJSON{}}
		for _, h := range hs {
			j := portHolderJSON{PID: h.PID, Listens: ports.ToJSON([]ports.Port{h.Port})[0], Tagged: h.session != nil}
			if h.PID != 0 {
				j.Comm = proc.CommOf(h.PID)
			}
			if h.claims != nil {
				j.Claims = h.claims.Key()
			}
			if h.session != nil {
				one := *h.session
				one.Processes = []session.Process{h.process}
				sj := jsonSessions([]session.Session{one})[0]
				read := ports.Listening([]int{h.PID})
				if p, ok := read.Known(h.PID); ok {
					sj.Processes[0].Ports = ports.ToJSON(p)
				} else {
					sj.Processes[0].PortsAbsent = read.Unknown[h.PID]
				}
				j.Session = &sj
			}
			out.Holders = append(out.Holders, j)
		}
		if err := writeJSON(c.App.Writer, out); err != nil {
			return err
		}
		if len(hs) == 0 || foreign {
			return &status.Error{Code: 1}
		}
		return nil
	}
	if len(hs) == 0 {
		return &status.Error{Code: 1, Err: fmt.Errorf("nothing listens on port %d", n)}
	}
	writePortTable(c.App.Writer, hs)
	if foreign {
		for _, h := range hs {
			if h.session == nil {
				text.Fprintf(c.App.ErrWriter, "contain: %s\n", untaggedWords(n, h))
			}
		}
		return &status.Error{Code: 1}
	}
	return nil
}

// writePortTable lists the holders that are in a session.
func writePortTable(w io.Writer, hs []portHolder) {
	t := &text.Table{}
	t.Row("PORT", "SESSION", "STATE", "PID", "USER", "COMMAND")
	rows := 0
	for _, h := range hs {
		if h.session == nil {
			continue
		}
		s := h.session
		t.Row(h.Port.String(), text.Printable(s.Key()), string(s.StateOf(h.process)), strconv.Itoa(h.PID),
			text.Printable(h.process.User), text.CommandLine(h.process.Argv, h.process.Comm))
		rows++
	}
	if rows > 0 {
		t.Write(w)
	}
}

// sessionsOnPort is --port N for stop and reap: the sessions whose
// processes listen on n, by value (what --session names, for the words
// and rules of a session named) and by key (the value in its PID
// namespace: another namespace's session of the same value is not it).
// A holder that is no session's is refused, with one line, and so is a
// port nothing listens on: nothing is signalled.
func sessionsOnPort(c *cli.Context, n uint16) (values, keys []string, err error) {
	hs, err := holdersOf(n)
	if err != nil {
		return nil, nil, &status.Error{Code: 1, Err: err}
	}
	if len(hs) == 0 {
		return nil, nil, &status.Error{Code: 1, Err: fmt.Errorf("%s: nothing listens on port %d", c.Command.Name, n)}
	}
	for _, h := range hs {
		if h.session == nil {
			return nil, nil, &status.Error{Code: 1, Err: fmt.Errorf("%s: %s; nothing was signalled", c.Command.Name, untaggedWords(n, h))}
		}
		if k := h.session.Key(); !slices.Contains(keys, k) {
			keys = append(keys, k)
			if !slices.Contains(values, h.session.Value) {
				values = append(values, h.session.Value)
			}
		}
	}
	return values, keys, nil
}

// portColumn says a process's ports in the PORTS column: "-" for none,
// "?" where they could not be read.
func portColumn(r ports.Reading, pid int) string {
	p, ok := r.Known(pid)
	if !ok {
		return "?"
	}
	return ports.Join(p)
}

// listedPIDs are the processes of sessions, for ports.Listening.
func listedPIDs(sessions []session.Session) []int {
	var pids []int
	for i := range sessions {
		for _, p := range sessions[i].Processes {
			pids = append(pids, p.PID)
		}
	}
	return pids
}

// portWords says ports from JSON in one field, as the PORTS column does.
func portWords(js []ports.JSON) string {
	var ps []ports.Port
	for _, j := range js {
		ps = append(ps, ports.Port{Proto: j.Proto, Addr: j.Address, Port: j.Port})
	}
	return ports.Join(ps)
}
