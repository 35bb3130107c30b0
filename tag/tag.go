// Package tag holds the environment contract that contain shares with other
// tools: RUNNING_PROCESS_ORIGINATOR=TOOL:PID and RUNNING_PROCESS_IS_DAEMON=1.
// It is the same on every OS.
package tag

import (
	"errors"
	"fmt"
	"runtime"
	"strconv"
	"strings"
	"unicode/utf8"
)

const (
	// Var names the originator variable every process of a session inherits.
	Var = "RUNNING_PROCESS_ORIGINATOR"
	// DaemonVar marks a process started on purpose to outlive its originator.
	DaemonVar = "RUNNING_PROCESS_IS_DAEMON"
	// MaxPID is the largest PID a value may name: kill(2) takes a pid_t, and
	// anything above 2^31-1 would wrap into a process group or -1.
	MaxPID = 1<<31 - 1
	// MaxToolLen bounds the originator names contain writes.
	MaxToolLen = 64
)

// ErrBadTool is returned for an originator name contain refuses to write.
var ErrBadTool = errors.New("invalid originator name")

// ErrMalformed is returned for a tag value that does not follow the contract.
var ErrMalformed = errors.New("malformed originator value")

// ValidateTool checks an originator name contain is asked to write:
// 1 to 64 characters of A-Z a-z 0-9 _ . -
func ValidateTool(tool string) error {
	if tool == "" {
		return fmt.Errorf("%w: empty (want 1 to %d characters of A-Z a-z 0-9 _ . -)", ErrBadTool, MaxToolLen)
	}
	for i, r := range tool {
		ok := r >= 'A' && r <= 'Z' || r >= 'a' && r <= 'z' || r >= '0' && r <= '9' || r == '_' || r == '.' || r == '-'
		if !ok {
			// The character as typed, quoted as the name is: "ü", "\x1b",
			// "\xff" for a byte that is not UTF-8.
			_, size := utf8.DecodeRuneInString(tool[i:])
			return fmt.Errorf("%w: %q has %q (allowed: A-Z a-z 0-9 _ . -)", ErrBadTool, tool, tool[i:i+size])
		}
	}
	if len(tool) > MaxToolLen {
		return fmt.Errorf("%w: %q is %d characters long (at most %d)", ErrBadTool, tool, len(tool), MaxToolLen)
	}
	return nil
}

// notInTool are the characters a TOOL never has in a well-formed value.
const notInTool = " \t\n\r\x00"

// CheckTool checks a TOOL to look for (ps -o, reap -o): one that a
// well-formed value of any tool can carry, as Parse reads it. It is not
// empty and has no space, tab, newline or NUL; unlike ValidateTool it takes
// what other tools may write, a ',' or a non-ASCII letter.
func CheckTool(tool string) error {
	if tool == "" {
		return fmt.Errorf("%w: empty TOOL", ErrBadTool)
	}
	if i := strings.IndexAny(tool, notInTool); i >= 0 {
		return fmt.Errorf("%w: %q has %q (no value's TOOL has a space, tab, newline or NUL)", ErrBadTool, tool, tool[i:i+1])
	}
	return nil
}

// Format builds the value TOOL:PID.
func Format(tool string, pid int) string {
	return tool + ":" + strconv.Itoa(pid)
}

// Parse splits a value at its last ':' into TOOL and PID. TOOL must be
// non-empty and PID a plain decimal in 1..2^31-1; anything else is malformed.
func Parse(value string) (tool string, pid int, err error) {
	i := strings.LastIndexByte(value, ':')
	if i <= 0 {
		return "", 0, fmt.Errorf("%w: %q", ErrMalformed, value)
	}
	tool, num := value[:i], value[i+1:]
	if strings.ContainsAny(tool, notInTool) || num == "" || len(num) > 10 {
		return "", 0, fmt.Errorf("%w: %q", ErrMalformed, value)
	}
	n := 0
	for j := 0; j < len(num); j++ {
		c := num[j]
		if c < '0' || c > '9' {
			return "", 0, fmt.Errorf("%w: %q", ErrMalformed, value)
		}
		n = n*10 + int(c-'0')
	}
	if n < 1 || n > MaxPID {
		return "", 0, fmt.Errorf("%w: %q: PID out of range 1..%d", ErrMalformed, value, MaxPID)
	}
	return tool, n, nil
}

// foldEnv: Windows environment names are case-insensitive, so an inherited
// running_process_originator is the same variable as ours there.
var foldEnv = runtime.GOOS == "windows"

// SetEnv returns env with every entry of key removed and, unless value is
// empty, one key=value appended. Inherited duplicates are dropped too, so a
// child can never see an old value first. On Windows names match whatever
// their case.
func SetEnv(env []string, key, value string) []string {
	return setEnv(env, key, value, foldEnv)
}

func setEnv(env []string, key, value string, fold bool) []string {
	out := make([]string, 0, len(env)+1)
	for _, kv := range env {
		if _, ok := valueOf(kv, key, fold); !ok {
			out = append(out, kv)
		}
	}
	if value != "" {
		out = append(out, key+"="+value)
	}
	return out
}

// Lookup finds key in env (KEY=value entries); the first entry wins, as
// for getenv(3). On Windows names match whatever their case, as for
// GetEnvironmentVariable.
func Lookup(env []string, key string) (string, bool) {
	for _, kv := range env {
		if v, ok := valueOf(kv, key, foldEnv); ok {
			return v, true
		}
	}
	return "", false
}

// valueOf returns the value of entry kv if its name is key.
func valueOf(kv, key string, fold bool) (string, bool) {
	if len(kv) <= len(key) || kv[len(key)] != '=' {
		return "", false
	}
	name := kv[:len(key)]
	if name == key || fold && strings.EqualFold(name, key) {
		return kv[len(key)+1:], true
	}
	return "", false
}
