package daemon

import (
	"bytes"
	"hash/fnv"

	"github.com/contain-cli/contain/tag"
)

// Mark is what a process's environment says of RUNNING_PROCESS_IS_DAEMON,
// with a digest of the whole environment: a process whose digest is its
// parent's has not shown an environment of its own yet (forked, not yet
// exec'd: its environment is still its parent's memory).
type Mark struct {
	Daemon bool
	Digest uint64
}

// markOf reads the mark from an environment, given as its entries.
func markOf(entries func(yield func(kv string) bool)) Mark {
	h := fnv.New64a()
	var m Mark
	prefix := tag.DaemonVar + "="
	entries(func(kv string) bool {
		h.Write([]byte(kv))
		h.Write([]byte{0})
		if len(kv) >= len(prefix) && kv[:len(prefix)] == prefix {
			m.Daemon = kv[len(prefix):] == "1"
		}
		return true
	})
	m.Digest = h.Sum64()
	return m
}

// MarkOfEnviron is the mark of an environment block as /proc/PID/environ
// holds it: NUL-terminated KEY=VALUE entries.
func MarkOfEnviron(env []byte) Mark {
	return markOf(func(yield func(string) bool) {
		for len(env) > 0 {
			var kv []byte
			kv, env, _ = bytes.Cut(env, []byte{0})
			if len(kv) > 0 && !yield(string(kv)) {
				return
			}
		}
	})
}

// MarkOfEnv is the mark of an environment given as KEY=VALUE entries.
func MarkOfEnv(env []string) Mark {
	return markOf(func(yield func(string) bool) {
		for _, kv := range env {
			if !yield(kv) {
				return
			}
		}
	})
}

// Marked reports whether env, KEY=VALUE entries as a Windows process's
// PEB holds them, carries RUNNING_PROCESS_IS_DAEMON=1: its first entry of
// that name, read as tag.Lookup reads one (the name's case ignored on
// Windows). It is how Windows judges a process: the job's breakaway watch
// when one has left the job, and the run's last look at those left in
// it.
func Marked(env []string) bool {
	v, _ := tag.Lookup(env, tag.DaemonVar)
	return v == "1"
}
