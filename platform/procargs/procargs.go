// Package procargs decodes what macOS's sysctl KERN_PROCARGS2 returns for a
// process: its argument count, executable path, arguments and environment.
// The decoder is a pure function over bytes, so that it is tested (and
// fuzzed) on every OS; only the sysctl itself is darwin code.
//
// The layout, as XNU copies it from the top of the process's stack:
//
//	int32 argc (little-endian on both arm64 and amd64)
//	exec path, NUL-terminated
//	NUL padding (zero or more)
//	argc strings, each NUL-terminated
//	environment strings, each NUL-terminated, up to an empty string
//	"apple" strings (executable_path=..., ptr_munge=...), not environment
//
// Its traps: a buffer cut short (the caller's size, or a process that is
// exiting), argc larger than the strings there are, an environment the
// kernel hides (since macOS 11, for many Apple-signed binaries such as
// /bin/sleep, readers other than root see no environment at all, with no
// error), and a buffer that no longer fits this layout because the process
// executed another program while it was read.
package procargs

import (
	"encoding/binary"
	"errors"
	"fmt"
	"strings"
)

// MaxArgs caps argc: a corrupt or shifted buffer must not make the decoder
// allocate for billions of strings (ARG_MAX is 1 MiB on macOS, so no real
// process has more strings than that).
const MaxArgs = 1 << 20

// Args is one decoded KERN_PROCARGS2 buffer.
type Args struct {
	Exec string   // the executable path the kernel recorded
	Argv []string // argc strings
	// Env is the environment, in order, without the apple strings. Empty
	// both when the process has none and when the kernel hides it:
	// EnvHidden tells which can be true.
	Env []string
	// EnvHidden is set when the buffer ends right after argv: the
	// environment section is missing, as when the kernel withholds it.
	EnvHidden bool
}

// ErrTruncated means the buffer ends before argc arguments were read.
var ErrTruncated = errors.New("procargs: buffer ends inside the arguments")

// Parse decodes b.
func Parse(b []byte) (Args, error) {
	if len(b) < 4 {
		return Args{}, fmt.Errorf("procargs: %d bytes, too short for argc", len(b))
	}
	argc := int32(binary.LittleEndian.Uint32(b))
	if argc < 0 || argc > MaxArgs {
		return Args{}, fmt.Errorf("procargs: argc %d out of range", argc)
	}
	rest := b[4:]
	path, rest, ok := cut(rest)
	if !ok {
		return Args{}, ErrTruncated
	}
	a := Args{Exec: path}
	// The padding: argv starts at the first byte that is not NUL. (An
	// empty argv[0] would be taken for padding; macOS's own ps does the
	// same, and execve with an empty argv[0] is rare.)
	for len(rest) > 0 && rest[0] == 0 {
		rest = rest[1:]
	}
	a.Argv = make([]string, 0, min(int(argc), len(rest)/2+1))
	for range argc {
		var s string
		if s, rest, ok = cut(rest); !ok {
			return a, ErrTruncated
		}
		a.Argv = append(a.Argv, s)
	}
	if len(rest) == 0 {
		a.EnvHidden = true
		return a, nil
	}
	for len(rest) > 0 {
		var s string
		if s, rest, ok = cut(rest); !ok || s == "" {
			break // the end of the environment, or a buffer cut short in it
		}
		a.Env = append(a.Env, s)
	}
	return a, nil
}

// cut splits b at its first NUL: the string before it, what follows, and
// whether there was a NUL.
func cut(b []byte) (string, []byte, bool) {
	for i, c := range b {
		if c == 0 {
			return string(b[:i]), b[i+1:], true
		}
	}
	return "", nil, false
}

// Getenv finds key in env, as the first entry KEY=value; the name is
// compared exactly (macOS's environment is case-sensitive).
func Getenv(env []string, key string) (string, bool) {
	for _, kv := range env {
		if k, v, ok := strings.Cut(kv, "="); ok && k == key {
			return v, true
		}
	}
	return "", false
}
