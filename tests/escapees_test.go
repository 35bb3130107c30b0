//go:build linux || darwin

package tests

import (
	"fmt"
	"strings"
)

// escapeeTree is a sh script that sets D to dir and starts one escapee of
// each kind, in that order, each writing its PID to $D/KIND; it goes on
// once every one has written its PID and is alive, so that an empty PID
// file or an escapee that failed to start never passes for one that
// contain ended. The caller adds what COMMAND does next (wait, exit).
// Each kind's line is written once, in escapeeLine, so that "a setsid
// escapee" is the same process in every test, on Linux and on macOS.
func escapeeTree(dir string, kinds ...string) string {
	var b strings.Builder
	fmt.Fprintf(&b, "\nD=%s\n", dir)
	for _, k := range kinds {
		b.WriteString(escapeeLine(k) + "\n")
	}
	fmt.Fprintf(&b, `for f in %s; do
	while [ ! -s $D/$f ]; do sleep 0.01; done
	kill -0 "$(cat $D/$f)" || exit 99
done
`, strings.Join(kinds, " "))
	return b.String()
}

// escapeeLine is the line of sh that starts an escapee of kind. setsid,
// one per OS, runs its arguments in a new session.
func escapeeLine(kind string) string {
	switch kind {
	case "background", "holder":
		// A background job: COMMAND's child, in its group, holding
		// contain's stdout and stderr (holder: TestReportLeftovers tells
		// it apart from quiet by that).
		return `sleep 300 & echo $! > $D/` + kind
	case "quiet":
		// A background job that holds neither stdout nor stderr.
		return `sleep 300 > /dev/null 2>&1 & echo $! > $D/quiet`
	case "setsid":
		// In a session of its own, out of COMMAND's group.
		return setsid + `sh -c 'echo $$ > '$D'/setsid; exec sleep 300' &`
	case "stubborn":
		// A setsid escapee that ignores SIGTERM and holds neither stdout
		// nor stderr: only SIGKILL ends it.
		return setsid + `sh -c 'trap "" TERM; echo $$ > '$D'/stubborn; exec sleep 300' > /dev/null 2>&1 &`
	case "doublefork":
		// Re-parented to PID 1 (or a subreaper), still in COMMAND's group.
		return `sh -c 'sleep 300 & echo $! > '$D'/doublefork' &`
	case "ignoresterm":
		return `sh -c 'trap "" TERM; echo $$ > '$D'/ignoresterm; exec sleep 300' &`
	case "untagged":
		// Dropped the tag but stayed in COMMAND's group.
		return `env -u RUNNING_PROCESS_ORIGINATOR sh -c 'echo $$ > '$D'/untagged; exec sleep 300' &`
	case "cleared":
		// A double fork in a new session with an empty environment: no
		// tag, not in COMMAND's group, its parent (in $D/clearedparent)
		// gone after 0.5 s: only the tracking (the session it saw) finds
		// it.
		return setsid + `env -i /bin/sh -c 'echo $$ > '$D'/clearedparent; sleep 300 & echo $! > '$D'/cleared; sleep 0.5' &`
	case "daemon":
		// A real daemonizing program.
		return `eval "$(ssh-agent -s -a $D/agent.sock)" > /dev/null && echo $SSH_AGENT_PID > $D/daemon`
	}
	panic("no escapee of kind " + kind)
}

// escapeeKinds are the escapees that the tracking alone (macOS's
// containment) must end. (A daemon that makes itself undumpable, as
// ssh-agent does, hides its environment even from its own user, and
// forks, leaves and setsids within a millisecond: as nobody, a scan rarely
// sees it in between. docs/GUIDE.md lists it among what tracking alone
// can miss.)
var escapeeKinds = []string{"background", "setsid", "doublefork", "cleared", "ignoresterm"}

// escapees starts every one of escapeeKinds and lets the scans see them
// while COMMAND is still their ancestor.
func escapees(dir string) string {
	return escapeeTree(dir, escapeeKinds...) + "sleep 0.5 # scans see every escapee while COMMAND is their ancestor\n"
}
