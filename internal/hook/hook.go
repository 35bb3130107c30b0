package hook

import (
	"io"
	"strconv"
	"time"

	"github.com/contain-cli/contain/internal/text"
	"github.com/contain-cli/contain/tag"
)

// Package hook is contain run's --on-timeout command (the hook): the part
// that is the same on every OS (its environment, the bounded wait, what
// -v says) in hook.go; the OS files (hook_unix.go, hook_windows.go) only
// start it and end it: Start starts it through the OS's shell, outside
// COMMAND's group and in a group of its own (a process group, a job
// object), so that it can be ended with everything it started.

// The variables the hook finds in its environment, on top of contain's own.
const (
	CommandPIDVar = "CONTAIN_COMMAND_PID" // COMMAND's PID
	SessionVar    = "CONTAIN_SESSION"     // the run's tag value, TOOL:PID
	ContainPIDVar = "CONTAIN_PID"         // contain's own PID
)

// Process is a hook as its OS started it.
type Process interface {
	// Wait waits for the hook itself (the shell) to end and says how it
	// ended, in -v's words ("exited 0", "killed by SIGKILL"). Run
	// calls it once, from a goroutine of its own, and may stop waiting
	// for it.
	Wait() string
	// Kill ends what is left of the hook's group: the hook itself if it
	// still runs, and whatever it started that is still in the group; it
	// then releases what the hook held (a handle, the job). Run calls
	// it exactly once, after Wait returned or the grace period passed, so
	// it must be harmless when nothing is left. Its error is only said.
	Kill() error
}

// Starter starts command through the OS's shell (sh -c, cmd /c)
// with env, stdin the null device and stdout and stderr contain's
// stderr, outside COMMAND's group, in a group of its own.
type Starter func(command string, env []string) (Process, error)

// Env is the hook's environment: base (contain's own, not COMMAND's:
// the hook is no part of the session) with COMMAND's PID, the session
// and contain's PID set, replacing any inherited value.
func Env(base []string, commandPID int, session string, containPID int) []string {
	env := tag.SetEnv(base, CommandPIDVar, strconv.Itoa(commandPID))
	env = tag.SetEnv(env, SessionVar, session)
	return tag.SetEnv(env, ContainPIDVar, strconv.Itoa(containPID))
}

// killWait bounds the wait for a hook that was killed: it is not
// waited for longer, whatever its OS does.
const killWait = time.Second

// WarnSkipped says on stderr, as the run starts, that the
// --on-timeout command will not run, when the grace period leaves it no
// time (-g 0): one line, with or without -v, so that a timeout does not
// pass without the hook unannounced.
func WarnSkipped(o Options, stderr io.Writer) {
	if o.Command != "" && o.Grace <= 0 {
		text.Fprintf(stderr, "contain: --on-timeout will not run: the grace period is 0 (-g 0), which leaves it no time; give it one with -g\n")
	}
}

// Options are what Run needs of the run.
type Options struct {
	Command string        // the hook's shell command ("": none)
	Grace   time.Duration // the most it is given
	Tag     string        // the run's tag value, TOOL:PID
	Log     func(format string, a ...any)
}

// Run runs o.Command, if set, when the timeout has fired and before the
// timeout signal is sent: started by start with Env's environment (base:
// contain's own), it is given at most o.Grace, then ended with what it
// started. It returns when the hook is over, at most o.Grace plus
// killWait after it started. Nothing of the hook changes how the run
// ends. A grace period of 0 leaves the hook no time: it is not run.
func Run(o Options, base []string, commandPID, containPID int, start Starter) {
	if o.Command == "" {
		return
	}
	log := o.Log
	if log == nil {
		log = func(string, ...any) {}
	}
	if o.Grace <= 0 {
		log("on-timeout: not running %s: the grace period is 0 (-g 0), which leaves it no time", o.Command)
		return
	}
	log("on-timeout: running %s", o.Command)
	began := time.Now()
	h, err := start(o.Command, Env(base, commandPID, o.Tag, containPID))
	if err != nil {
		log("on-timeout: cannot run it: %v", err)
		return
	}
	ended := make(chan string, 1)
	go func() { ended <- h.Wait() }()
	t := time.NewTimer(o.Grace)
	defer t.Stop()
	select {
	case how := <-ended:
		log("on-timeout: %s after %v", how, time.Since(began).Round(time.Millisecond))
		if err := h.Kill(); err != nil {
			log("on-timeout: cannot end what it left running: %v", err)
		}
		return
	case <-t.C:
	}
	log("on-timeout: still running after the grace period of %v: ending it and what it started", o.Grace)
	if err := h.Kill(); err != nil {
		log("on-timeout: cannot end it: %v", err)
	}
	select {
	case how := <-ended:
		log("on-timeout: %s", how)
	case <-time.After(killWait):
		log("on-timeout: still running %v after it was ended; going on without it", killWait)
	}
}
