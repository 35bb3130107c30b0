package daemon

import (
	"errors"
	"fmt"
	"strconv"
	"strings"

	"github.com/contain-cli/contain/internal/proc"
	"github.com/contain-cli/contain/internal/procfs"
	"github.com/contain-cli/contain/tag"
)

// The words of the claim of contain run -d (claim_linux.go), apart from
// the socket: pure, so that they are tested and fuzzed on every OS.
//
// The run, once it has checked who connected, asks (ClaimPrompt); contain
// run -d answers with one line, "PID START", the daemon it started; the
// run answers "ok" or "no REASON".
const (
	ClaimPrompt  = "claim?"
	MaxClaimLine = 256
)

// FormatClaim is contain run -d's claim for the daemon id.
func FormatClaim(id proc.ID) string {
	return fmt.Sprintf("%d %d\n", id.PID, id.Start)
}

// ParseClaim reads a claim line (without its newline): two decimal
// numbers, a PID above 1 and a start time, separated by one space.
// Nothing else is accepted: no sign, no leading zero, no spaces around.
func ParseClaim(line string) (proc.ID, error) {
	if len(line) > MaxClaimLine {
		return proc.ID{}, errors.New("malformed claim: too long")
	}
	p, s, ok := strings.Cut(line, " ")
	if !ok || !plainDecimal(p) || !plainDecimal(s) {
		return proc.ID{}, errors.New("malformed claim")
	}
	pid, err := strconv.Atoi(p)
	if err != nil || pid <= 1 || pid > 1<<30 {
		return proc.ID{}, errors.New("malformed claim: bad PID")
	}
	start, err := strconv.ParseUint(s, 10, 64)
	if err != nil {
		return proc.ID{}, errors.New("malformed claim: bad start time")
	}
	return proc.ID{PID: pid, Start: start}, nil
}

// plainDecimal reports whether s is digits only, without a leading zero
// (0 itself aside), and not too long for a uint64.
func plainDecimal(s string) bool {
	if s == "" || len(s) > 20 || len(s) > 1 && s[0] == '0' {
		return false
	}
	for i := 0; i < len(s); i++ {
		if s[i] < '0' || s[i] > '9' {
			return false
		}
	}
	return true
}

// ClaimedEnv reads a claimed process's environment (/proc/PID/environ:
// NUL-terminated entries): tagged, whether it carries a tag at all (one
// that wrote its title over its environment, or was started with none,
// shows none: its word is all there is), and marked, whether it carries
// RUNNING_PROCESS_IS_DAEMON=1.
func ClaimedEnv(env []byte) (tagged, marked bool) {
	_, tagged = procfs.Getenv(env, tag.Var)
	return tagged, MarkOfEnviron(env).Daemon
}

// RunBoolFlags are contain run's options that take no value (runcmd's
// Options with Bool, and help): the others take the next argument unless
// given as --NAME=VALUE. Kept in step with runcmd by a test.
var RunBoolFlags = map[string]bool{
	"preserve-status": true, "p": true, "detach": true, "d": true, "verbose": true, "v": true, "quiet": true, "q": true,
	"strict-limits": true, "allow-daemons": true, "foreground": true, "f": true, "help": true, "h": true,
}

// RunValueFlags are contain run's options that take a value, by every
// name (kept in step with runcmd by the same test): a whole name after
// one dash (-timeout 5) is that option, not a bundle of letters.
var RunValueFlags = map[string]bool{
	"originator": true, "o": true, "timeout": true, "t": true, "signal": true, "s": true,
	"kill-after": true, "k": true, "grace": true, "g": true, "report": true, "memory": true, "m": true,
	"pids": true, "pids-limit": true, "cpu-time": true, "cpus": true, "on-timeout": true, "events": true,
}

// DetachArgv reports whether argv (a process's /proc/PID/cmdline) is
// contain run with --detach, as runcmd's parser (the standard flag
// package) reads it: "run", then options up to "--" or the first
// argument that is none, among them -d, --detach, -detach, or one of
// those =true (or any other true of strconv.ParseBool).
func DetachArgv(argv []string) bool {
	if len(argv) < 3 || argv[1] != "run" {
		return false
	}
	detach := false
	for i := 2; i < len(argv); i++ {
		a := argv[i]
		if a == "--" || len(a) < 2 || a[0] != '-' {
			break
		}
		name := strings.TrimPrefix(a[1:], "-")
		name, value, hasValue := strings.Cut(name, "=")
		if name == "" || name[0] == '-' || name[0] == '=' {
			break // flag's own error: contain run stops there
		}
		if RunBoolFlags[name] {
			if name == "detach" || name == "d" {
				detach = true
				if hasValue {
					detach, _ = strconv.ParseBool(value)
				}
			}
			continue
		}
		if a[1] != '-' && len(name) > 1 && !RunValueFlags[name] {
			// Short options bundled, as getopt_long reads them (-vd,
			// -vt5, -vt 5): up to the first that takes a value, whose
			// value is the rest, or else the next argument.
			for j := 1; j < len(a); j++ {
				c := a[j : j+1]
				if RunBoolFlags[c] {
					detach = detach || c == "d"
					continue
				}
				if j == len(a)-1 {
					i++ // its value
				}
				break
			}
			continue
		}
		if !hasValue {
			i++ // its value
		}
	}
	return detach
}
