// Package procargs decodes what macOS's sysctl KERN_PROCARGS2 returns for a
// process: its argument count, executable path, arguments and environment.
// The decoder is a pure function over bytes, so that it is tested (and
// fuzzed) on every OS; only the sysctl itself is darwin code.
//
// The layout, as XNU copies it from the top of the process's stack (the
// strings area that execve built, xnu bsd/kern/kern_exec.c; the sysctl
// strips "executable_path=" off its first string, kern_sysctl.c):
//
//	int32 argc (little-endian on both arm64 and amd64)
//	exec path, NUL-terminated
//	NUL padding up to an 8-byte boundary (counted from the byte after
//	  argc), so that argv[0] starts on one
//	argc strings, each NUL-terminated
//	environment strings, each NUL-terminated
//	NUL padding up to an 8-byte boundary: none when the environment
//	  already ends on one
//	"apple" strings (pfz=..., stack_guard=..., ptr_munge=...), not
//	  environment, then NUL padding up to an 8-byte boundary
//
// Its traps: a buffer cut short (the caller's size, or a process that is
// exiting), argc larger than the strings there are, an environment the
// kernel hides (since macOS 11, for many Apple-signed binaries such as
// /bin/sleep, from every reader but the process itself: root is not
// exempt, only System Integrity Protection turned off or an Apple
// entitlement is; xnu kern_sysctl.c, cs_restricted), apple strings
// straight after the environment when it needed no padding, and a buffer
// that no longer fits this layout because the process executed another
// program while it was read (Plausible).
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
	// ArgvAt is where argv[0] starts, counted from the byte after argc:
	// on a boundary of 8 in what XNU writes.
	ArgvAt int
}

// Plausible reports whether a decoded buffer has the shape XNU gives it,
// for a process whose p_comm (kinfo_proc's, "" when not known) is comm:
// argv starts on an 8-byte boundary, and the executable's file name
// begins with comm (XNU copies at most MAXCOMLEN, 16 bytes, of it). A
// buffer read while the process executed another program can be the tail
// of the new program's strings, which may decode all the same, with a tag
// taken for an argument or none at all; the caller reads such a buffer
// again. Plausible can also be false for a buffer that is right (an
// executable started through a symbolic link, whose p_comm is the link's
// target's name): reading it again gives the same bytes, which the caller
// then takes.
func (a Args) Plausible(comm string) bool {
	if a.ArgvAt%8 != 0 {
		return false
	}
	if comm == "" {
		return true
	}
	name := a.Exec[strings.LastIndexByte(a.Exec, '/')+1:]
	return strings.HasPrefix(name, comm) && (len(comm) >= 16 || name == comm)
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
	data := b[4:]
	at := func(rest []byte) int { return len(data) - len(rest) }
	rest := data
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
	a.ArgvAt = at(rest)
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
	var starts []int // where each entry of Env starts
	ended := false   // at an empty string
	for len(rest) > 0 {
		start := at(rest)
		var s string
		if s, rest, ok = cut(rest); !ok {
			break // a buffer cut short in an entry: the entry is dropped
		}
		if s == "" {
			ended = true
			break
		}
		a.Env = append(a.Env, s)
		starts = append(starts, start)
	}
	if ended && !allNUL(rest) {
		return a, nil // the padding, then the apple strings: the environment is whole
	}
	// No padding after the environment: its entries ran on into the apple
	// strings. Those are the entries from one on an 8-byte boundary to the
	// end that all have an apple string's name; a name this list does not
	// know (a later macOS) leaves the apple strings in Env, where they are
	// harmless to what contain reads (the tag), and an environment that
	// ends with variables of those names, one on the boundary, loses them.
	k := len(a.Env)
	for k > 0 && appleString(a.Env[k-1]) {
		k--
	}
	for k < len(a.Env) && starts[k]%8 != 0 {
		k++
	}
	a.Env = a.Env[:k]
	return a, nil
}

// appleKeys are the names of the apple strings XNU puts after the
// environment (exec_add_apple_strings, xnu-11417, and earlier ones).
var appleKeys = map[string]bool{
	"executable_path": true, "pfz": true, "stack_guard": true, "malloc_entropy": true, "ptr_munge": true,
	"main_stack": true, "executable_file": true, "dyld_file": true, "executable_cdhash": true,
	"executable_boothash": true, "dyld_flags": true, "subsystem_root_path": true, "ptrauth_disabled": true,
	"arm64e_abi": true, "th_port": true, "vm_force_4k_pages": true, "MallocNanoZone": true,
	"MallocExperiment": true, "hardened_heap": true, "dyld_hw_tpro": true, "HardenedRuntime": true,
}

// appleString reports whether s is named as an apple string.
func appleString(s string) bool {
	k, _, ok := strings.Cut(s, "=")
	return ok && appleKeys[k]
}

// allNUL reports whether b holds nothing but NULs.
func allNUL(b []byte) bool {
	for _, c := range b {
		if c != 0 {
			return false
		}
	}
	return true
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
