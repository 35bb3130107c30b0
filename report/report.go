// Package report is the JSON document contain run writes with --report:
// what the whole tree did, what was left behind and what became of it.
// The schema is versioned; docs/REPORT.md documents it.
package report

import (
	"encoding/json"
	"fmt"
	"io"
	"math"
	"strconv"
	"strings"
	"time"
)

// Version is the schema's version; it changes only when a field changes
// meaning or goes away, or a field is added that a reader must not miss
// (2: limits).
const Version = 2

// Report is one run of contain, as contain (or its crash guard) saw it.
type Report struct {
	Version     int      `json:"version"`
	WrittenBy   string   `json:"written_by"` // "contain"; after a crash "shim" (no cgroup) or "guard"
	Command     []string `json:"command,omitempty"`
	ContainPID  int      `json:"contain_pid"`
	Tag         string   `json:"tag"`
	Started     Time     `json:"started"`
	Ended       Time     `json:"ended"`
	WallSeconds float64  `json:"wall_seconds"`
	Ending      Ending   `json:"ending"`
	// ContainmentFailure says what broke containment while COMMAND ran
	// (the shim killed before COMMAND ended) and what contain did then;
	// absent when nothing did.
	ContainmentFailure string `json:"containment_failure,omitempty"`
	// Untold lists the processes contain could not tell to be the
	// session's or not, and so neither ended nor counted among the
	// leftovers (tracking alone: no cgroup, subreaper or shim); absent
	// when it could account for every process.
	Untold []Untold `json:"untold,omitempty"`
	// Containment names the layers, as -v does.
	Containment []string  `json:"containment"`
	Resources   Resources `json:"resources"`
	// Limits are the whole-tree limits asked for, by name ("memory",
	// "pids", "cpu_time", "cpus"); absent when none was.
	Limits    map[string]Limit `json:"limits,omitempty"`
	Leftovers []Leftover       `json:"leftovers"`
	// EndedByContain lists every process contain ended: signalled to end
	// with the group (the timeout, a limit, a request to stop), after
	// COMMAND ended (the leftovers it signalled), or, after a crash, by
	// its guard or shim. COMMAND is among them when contain ended it.
	EndedByContain []Ended `json:"ended_by_contain"`
	// Absent names each top-level field that could not be known, and why.
	Absent map[string]string `json:"absent,omitempty"`
}

// Time is a time in RFC 3339 with nanoseconds, in UTC.
type Time struct{ time.Time }

func (t Time) MarshalJSON() ([]byte, error) {
	return json.Marshal(t.UTC().Format(time.RFC3339Nano))
}

func (t *Time) UnmarshalJSON(b []byte) error {
	var s string
	if err := json.Unmarshal(b, &s); err != nil {
		return err
	}
	v, err := time.Parse(time.RFC3339Nano, s)
	t.Time = v
	return err
}

// Ending is how COMMAND and contain ended.
type Ending struct {
	ExitCode           *int   `json:"exit_code,omitempty"` // COMMAND exited with it
	Signal             string `json:"signal,omitempty"`    // COMMAND was killed by it
	TimedOut           *bool  `json:"timed_out,omitempty"`
	KilledAfterTimeout *bool  `json:"killed_after_timeout,omitempty"` // --kill-after's SIGKILL was sent
	ToldToStop         string `json:"told_to_stop,omitempty"`         // the signal that told contain to stop
	ContainExitStatus  *int   `json:"contain_exit_status,omitempty"`
	// ContainSignal: contain ended itself with COMMAND's signal (its
	// status is then 128+N, as a shell sees it).
	ContainSignal string            `json:"contain_signal,omitempty"`
	Absent        map[string]string `json:"absent,omitempty"`
}

// Resources are what the whole group used, escapees included. A figure the
// OS cannot give is absent, with the reason in Absent; Sources says where
// each figure comes from.
type Resources struct {
	CPUUserSeconds   *float64 `json:"cpu_user_seconds,omitempty"`
	CPUSystemSeconds *float64 `json:"cpu_system_seconds,omitempty"`
	// PeakMemoryBytes is the group's peak, all processes together.
	PeakMemoryBytes *uint64 `json:"peak_memory_bytes,omitempty"`
	// MaxProcessRSSBytes is the largest peak resident set of one process.
	MaxProcessRSSBytes *uint64           `json:"max_process_rss_bytes,omitempty"`
	PeakProcesses      *int              `json:"peak_processes,omitempty"`
	IOReadBytes        *uint64           `json:"io_read_bytes,omitempty"`
	IOWriteBytes       *uint64           `json:"io_write_bytes,omitempty"`
	Sources            map[string]string `json:"sources"`
	Absent             map[string]string `json:"absent,omitempty"`
}

// Limit is one whole-tree limit of the run and what became of it.
type Limit struct {
	// Value is the limit in Unit: "bytes", "processes", "seconds", "cpus".
	Value float64 `json:"value"`
	Unit  string  `json:"unit"`
	// EnforcedBy names what held it: "cgroup memory.max", "cgroup
	// pids.max", "cgroup cpu.max", "cgroup cpu.stat, polled every 50ms",
	// "job object", "sampling every 50ms", "freezing the cgroup, sampled
	// every 50ms", "SIGSTOP/SIGCONT, sampled every 50ms".
	EnforcedBy string `json:"enforced_by"`
	Exceeded   bool   `json:"exceeded"`
	// Peak is the most that was observed, in Unit (cpus: the tree's
	// busiest sampling window).
	Peak *float64 `json:"peak,omitempty"`
	// Action is what was done when it was exceeded: "killed the tree",
	// "the kernel's OOM killer ended the tree", "forks refused", "sent
	// the timeout signal SIGTERM", "throttled".
	Action string `json:"action,omitempty"`
	// Note is a remark: an OOM kill inside the tree for a limit that is
	// not this one (an ancestor cgroup's).
	Note string `json:"note,omitempty"`
	// HeldBy names what held the limit when it was exceeded: for memory,
	// the processes with the most resident memory at that moment (or the
	// process the kernel's OOM killer ended, or the one the job object
	// refused an allocation); for processes, those that had started the
	// most of the tree's live processes.
	HeldBy []Holder          `json:"held_by,omitempty"`
	Absent map[string]string `json:"absent,omitempty"`
}

// Holder is a process that held a limit (Limit.HeldBy).
type Holder struct {
	PID  int    `json:"pid"`
	Comm string `json:"comm,omitempty"`
	// RSSBytes is its resident memory then (for an OOM kill's victim,
	// its resident memory as the kernel killed it, or its peak).
	RSSBytes *uint64 `json:"rss_bytes,omitempty"`
	// Children is how many of the tree's live processes it had started
	// (its children then).
	Children int `json:"children,omitempty"`
	// How says how it held the limit, where that is not its share:
	// "ended by the kernel's OOM killer", "refused an allocation".
	How string `json:"how,omitempty"`
}

// HolderWords say holders for a line: "tail (PID 123, 98.2 MiB), sh (PID
// 120, 1.1 MiB)", "sh (PID 120, started 40)".
func HolderWords(hs []Holder) string {
	var w []string
	for _, h := range hs {
		var about []string
		about = append(about, fmt.Sprintf("PID %d", h.PID))
		if h.RSSBytes != nil {
			about = append(about, Size(*h.RSSBytes))
		}
		if h.Children > 0 {
			about = append(about, fmt.Sprintf("started %d", h.Children))
		}
		if h.How != "" {
			about = append(about, h.How)
		}
		name := h.Comm
		if name == "" {
			name = "?"
		}
		w = append(w, fmt.Sprintf("%s (%s)", name, strings.Join(about, ", ")))
	}
	return strings.Join(w, ", ")
}

// Words say the limit as -v's summary does: "memory limit 100 MiB".
func (l Limit) Words() string {
	switch l.Unit {
	case "bytes":
		return "memory limit " + Size(uint64(l.Value))
	case "processes":
		return fmt.Sprintf("process limit %g", l.Value)
	case "seconds":
		return fmt.Sprintf("CPU time limit %gs", l.Value)
	}
	return fmt.Sprintf("CPU share %g", l.Value)
}

// Untold is a process that started during the run and that contain could
// not tell: its environment was written over by a process title, hidden
// or unreadable, and nothing else linked it to the session or to anyone
// else (its parent is gone).
type Untold struct {
	PID     int      `json:"pid"`
	Comm    string   `json:"comm,omitempty"`
	Started *Time    `json:"started,omitempty"`
	Argv    []string `json:"argv"`
	Why     string   `json:"why"`
}

// Leftover is a process still alive when COMMAND ended.
type Leftover struct {
	PID int `json:"pid"`
	// Comm is its name as the kernel keeps it (comm, as ps shows it).
	Comm    string   `json:"comm,omitempty"`
	Started *Time    `json:"started,omitempty"`
	Argv    []string `json:"argv"`
	// FoundBy is how contain knew it: "descendant", "cgroup", "process
	// group", "session", "tracked", "tag", "marker", "lineage", "job".
	FoundBy          string `json:"found_by"`
	LeftProcessGroup *bool  `json:"left_process_group,omitempty"`
	LeftSession      *bool  `json:"left_session,omitempty"`
	HeldStdout       *bool  `json:"held_stdout,omitempty"`
	HeldStderr       *bool  `json:"held_stderr,omitempty"`
	// EndedBy is how it ended: "SIGTERM", "SIGKILL" (or another signal:
	// it died of it); "exited N" (it exited by itself, before contain
	// signalled it); "SIGTERM, then exited N" (it exited after contain
	// sent it SIGTERM, that is because it was told to); "..., then ended,
	// status unknown" or "ended, status unknown" (neither contain nor its
	// shim was its parent, so no status came back); "still running" when
	// contain could not end it.
	EndedBy string `json:"ended_by"`
	// Daemon: it carried RUNNING_PROCESS_IS_DAEMON=1 when contain first
	// saw it. Spared: --allow-daemons let it leave the group; it was not
	// signalled, and its EndedBy says "spared (--allow-daemons)".
	Daemon bool `json:"daemon,omitempty"`
	Spared bool `json:"spared,omitempty"`
	// Ports are the TCP and UDP sockets it listened on when contain
	// ended it (absent: none, or Absent["ports"] says why they were not
	// read).
	Ports []Port `json:"ports,omitempty"`
	// EndedAfterSeconds is how long after COMMAND's end it was seen gone.
	EndedAfterSeconds *float64          `json:"ended_after_seconds,omitempty"`
	Absent            map[string]string `json:"absent,omitempty"`
}

// Port is a socket a process listens on: a TCP socket in LISTEN, or a
// bound UDP socket connected to no peer. Address is the local address
// (0.0.0.0 or ::: every address).
type Port struct {
	Proto   string `json:"proto"` // "tcp" or "udp"
	Address string `json:"address"`
	Port    uint16 `json:"port"`
}

// The phases in which contain ends processes (Ended.Phase).
const (
	PhaseTimeout = "timeout"             // the timeout signal, and --kill-after's SIGKILL
	PhaseLimit   = "limit"               // a limit was exceeded (--memory, --pids, --cpu-time)
	PhaseStop    = "told to stop"        // contain was told to stop (SIGINT, SIGTERM, contain stop)
	PhaseClose   = "after COMMAND ended" // the close of the group: the leftovers
	PhaseCrash   = "crash"               // contain was killed: its guard or shim ended it
)

// Ended is a process contain ended: it sent it a signal (or terminated
// it) to end it, and it was gone when contain was done.
type Ended struct {
	PID  int    `json:"pid"`
	Comm string `json:"comm,omitempty"` // its name, as read when contain signalled it
	// Argv is its command line when contain first signalled it (absent
	// when it could not be read then).
	Argv    []string `json:"argv,omitempty"`
	Started *Time    `json:"started,omitempty"`
	// Command: it was COMMAND.
	Command bool `json:"command,omitempty"`
	// Phase is when contain first signalled it: PhaseTimeout, PhaseLimit,
	// PhaseStop, PhaseClose or PhaseCrash.
	Phase string `json:"phase"`
	// Signal is the last signal contain sent it ("SIGTERM", "SIGKILL";
	// on Windows "CTRL_BREAK_EVENT" or "TerminateJobObject").
	Signal string `json:"signal"`
	// EndedBy is how it ended, in Leftover.EndedBy's words: "SIGKILL"
	// (it died of it), "SIGTERM, then exited 0", "SIGTERM, then ended,
	// status unknown", or "still running" when contain could not end it.
	EndedBy string            `json:"ended_by"`
	Absent  map[string]string `json:"absent,omitempty"`
}

// Seconds is d in seconds, for a field.
func Seconds(d time.Duration) *float64 {
	s := d.Seconds()
	return &s
}

// Ptr returns a pointer to v, for a field.
func Ptr[T any](v T) *T { return &v }

// New starts a report.
func New(by string) *Report {
	return &Report{Version: Version, WrittenBy: by, Containment: []string{}, Leftovers: []Leftover{},
		EndedByContain: []Ended{},
		Resources:      Resources{Sources: map[string]string{}}}
}

// Write writes r to path, "-" being stderr: to a new file beside path,
// renamed over it, so that a symbolic link at path is replaced, never
// followed (the exceptions, FIFOs and character devices such as
// /dev/stderr, are in write.go).
func Write(path string, r *Report, stderr io.Writer) error {
	var buf strings.Builder
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false) // a command line's & and < as they are
	enc.SetIndent("", "  ")
	if err := enc.Encode(r); err != nil {
		return err
	}
	if path == "-" {
		_, err := io.WriteString(stderr, buf.String())
		return err
	}
	return writeFile(path, []byte(buf.String()))
}

// CheckPath refuses, before anything runs, a path the report could not be
// written to at the end: its directory is missing or no directory, the
// path is a directory, or the user may not write it (an existing file) or
// create it (in its directory: the report is written to a new file there
// and renamed over the path), or it is a link or file of another user's
// in a sticky directory (/tmp), which contain would neither follow nor be
// allowed to replace. The check touches nothing: it asks the kernel
// (access(2), with the effective IDs, so that a read-only file system
// counts too, and root may write anywhere else), and neither creates nor
// truncates the file, so that a run refused for another reason, or a
// COMMAND that reads the previous report, finds it as it was. What
// changes during the run (the directory removed, its mode changed) still
// makes the write at the end fail, with one line on stderr.
func CheckPath(path string) error {
	if path == "-" {
		return nil
	}
	if path == "" {
		return fmt.Errorf("the report path is empty")
	}
	_, _, err := plan(path, true, "report")
	return err
}

// Summary is the report in one line, for -v.
func Summary(r *Report) string {
	var b strings.Builder
	b.WriteString("done: ")
	switch e := r.Ending; {
	case e.ExitCode != nil:
		fmt.Fprintf(&b, "exit %d", *e.ExitCode)
	case e.Signal != "":
		fmt.Fprintf(&b, "killed by %s", e.Signal)
	default:
		b.WriteString("COMMAND's end unknown")
	}
	if t := r.Ending.TimedOut; t != nil && *t {
		b.WriteString(" (timed out)")
	}
	for _, key := range []string{"memory", "pids", "cpu_time", "cpus"} {
		switch l, ok := r.Limits[key]; {
		case !ok || !l.Exceeded:
		case key == "cpus":
			// A share throttles, it never ends anything.
			fmt.Fprintf(&b, " (held to %g CPUs)", l.Value)
		default:
			fmt.Fprintf(&b, " (%s exceeded: %s)", l.Words(), l.Action)
		}
	}
	fmt.Fprintf(&b, ", %.3fs wall", r.WallSeconds)
	res := r.Resources
	if res.CPUUserSeconds != nil && res.CPUSystemSeconds != nil {
		fmt.Fprintf(&b, ", CPU %.3fs user %.3fs system", *res.CPUUserSeconds, *res.CPUSystemSeconds)
	}
	switch {
	case res.PeakMemoryBytes != nil:
		fmt.Fprintf(&b, ", peak memory %s", Size(*res.PeakMemoryBytes))
	case res.MaxProcessRSSBytes != nil:
		fmt.Fprintf(&b, ", largest process %s", Size(*res.MaxProcessRSSBytes))
	}
	if res.PeakProcesses != nil {
		fmt.Fprintf(&b, ", peak %d process", *res.PeakProcesses)
		if *res.PeakProcesses != 1 {
			b.WriteString("es")
		}
	}
	counts := map[string]int{}
	var order []string
	for _, l := range r.Leftovers {
		if counts[l.EndedBy] == 0 {
			order = append(order, l.EndedBy)
		}
		counts[l.EndedBy]++
	}
	fmt.Fprintf(&b, ", %s", plural(len(r.Leftovers), "leftover"))
	for i, how := range order {
		sep := ", "
		if i == 0 {
			sep = " ("
		}
		fmt.Fprintf(&b, "%s%d %s", sep, counts[how], endedWord(how))
	}
	if len(order) > 0 {
		b.WriteString(")")
	}
	b.WriteString(endedWords(r.EndedByContain))
	if n := len(r.Untold); n > 0 {
		fmt.Fprintf(&b, ", %d started during the run that contain could not tell (not ended)", n)
	}
	if r.ContainmentFailure != "" {
		b.WriteString(", containment failed: " + r.ContainmentFailure)
	}
	return b.String()
}

// endedWords says what contain ended before COMMAND's end (the close's
// are the leftovers, said already), by phase, with the names:
// ", the timeout ended 4 processes (sh, 3 sleep)".
func endedWords(ended []Ended) string {
	var phases []string
	by := map[string][]string{}
	for _, e := range ended {
		if e.Phase == PhaseClose || e.EndedBy == "still running" {
			continue
		}
		if _, ok := by[e.Phase]; !ok {
			phases = append(phases, e.Phase)
		}
		by[e.Phase] = append(by[e.Phase], e.Comm)
	}
	var b strings.Builder
	for _, phase := range phases {
		subject := map[string]string{PhaseTimeout: "the timeout", PhaseLimit: "the limit", PhaseStop: "the request to stop", PhaseCrash: "the crash guard"}[phase]
		if subject == "" {
			subject = phase
		}
		fmt.Fprintf(&b, ", %s ended %s (%s)", subject, plural(len(by[phase]), "process"), Names(by[phase]))
	}
	return b.String()
}

// Names lists process names, each once with how many there were, in the
// order first seen: "sh, 3 sleep" ("?" for a name that is empty).
func Names(names []string) string {
	var order []string
	count := map[string]int{}
	for _, name := range names {
		if name == "" {
			name = "?"
		}
		if count[name] == 0 {
			order = append(order, name)
		}
		count[name]++
	}
	var b strings.Builder
	for i, name := range order {
		if i > 0 {
			b.WriteString(", ")
		}
		if n := count[name]; n > 1 {
			fmt.Fprintf(&b, "%d ", n)
		}
		b.WriteString(name)
	}
	return b.String()
}

func endedWord(how string) string {
	const unknown = "ended, status unknown"
	sig, then, told := strings.Cut(how, ", then ")
	switch {
	case told && then == unknown:
		return "ended after " + sig + " (status unknown)"
	case told:
		return then + " after " + sig
	case how == unknown:
		return "ended (status unknown)"
	case strings.HasPrefix(how, "SIG"):
		return "ended by " + how
	}
	return how
}

// plural is "1 leftover", "2 leftovers", "no leftovers" ("processes").
func plural(n int, word string) string {
	words := word + "s"
	if strings.HasSuffix(word, "s") {
		words = word + "es"
	}
	switch n {
	case 0:
		return "no " + words
	case 1:
		return "1 " + word
	}
	return fmt.Sprintf("%d %s", n, words)
}

// Size says a number of bytes as every line of contain does, in binary
// units rounded to a tenth, without a trailing .0: "100 MiB", "1.5 GiB",
// "5.2 MiB", "512 bytes".
func Size(b uint64) string {
	units := []string{"bytes", "KiB", "MiB", "GiB", "TiB"}
	f, i := float64(b), 0
	for f >= 1024 && i < len(units)-1 {
		f, i = f/1024, i+1
	}
	if i == 0 {
		return fmt.Sprintf("%d bytes", b)
	}
	// Rounded first: 1023.96 KiB is "1 MiB", not "1024 KiB".
	if r := math.Round(f*10) / 10; r >= 1024 && i < len(units)-1 {
		f, i = f/1024, i+1
	}
	return strconv.FormatFloat(math.Round(f*10)/10, 'f', -1, 64) + " " + units[i]
}
