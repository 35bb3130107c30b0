package run

import (
	"fmt"
	"io"
	"strconv"
	"time"

	"github.com/contain-cli/contain/tag"
)

// The --on-timeout command (the hook), the part that is the same on every
// OS: its environment, the bounded wait, what -v says. The OS files
// (ontimeout_unix.go, ontimeout_windows.go) only start it and end it: a
// hookStarter starts it through the OS's shell, outside COMMAND's group
// and in a group of its own (a process group, a job object), so that it
// can be ended with everything it started.

// The variables the hook finds in its environment, on top of contain's own.
const (
	HookCommandPIDVar = "CONTAIN_COMMAND_PID" // COMMAND's PID
	HookSessionVar    = "CONTAIN_SESSION"     // the run's tag value, TOOL:PID
	HookContainPIDVar = "CONTAIN_PID"         // contain's own PID
)

// hookProcess is a hook as its OS started it.
type hookProcess interface {
	// Wait waits for the hook itself (the shell) to end and says how it
	// ended, in -v's words ("exited 0", "killed by SIGKILL"). runHook
	// calls it once, from a goroutine of its own, and may stop waiting
	// for it.
	Wait() string
	// Kill ends what is left of the hook's group: the hook itself if it
	// still runs, and whatever it started that is still in the group; it
	// then releases what the hook held (a handle, the job). runHook calls
	// it exactly once, after Wait returned or the grace period passed, so
	// it must be harmless when nothing is left. Its error is only said.
	Kill() error
}

// hookStarter starts command through the OS's shell (sh -c, cmd /c)
// with env, stdin the null device and stdout and stderr contain's
// stderr, outside COMMAND's group, in a group of its own.
type hookStarter func(command string, env []string) (hookProcess, error)

// hookEnv is the hook's environment: base (contain's own, not COMMAND's:
// the hook is no part of the session) with COMMAND's PID, the session
// and contain's PID set, replacing any inherited value.
func hookEnv(base []string, commandPID int, session string, containPID int) []string {
	env := tag.SetEnv(base, HookCommandPIDVar, strconv.Itoa(commandPID))
	env = tag.SetEnv(env, HookSessionVar, session)
	return tag.SetEnv(env, HookContainPIDVar, strconv.Itoa(containPID))
}

// hookKillWait bounds the wait for a hook that was killed: it is not
// waited for longer, whatever its OS does.
const hookKillWait = time.Second

// warnHookSkipped says on stderr, as the run starts, that the
// --on-timeout command will not run, when the grace period leaves it no
// time (-g 0): one line, with or without -v, so that a timeout does not
// pass without the hook unannounced.
func warnHookSkipped(o *Options, stderr io.Writer) {
	if o.OnTimeout != "" && o.Grace <= 0 && !o.Detach {
		fmt.Fprintf(stderr, "contain: --on-timeout will not run: the grace period is 0 (-g 0), which leaves it no time; give it one with -g\n")
	}
}

// runHook runs o.OnTimeout, if set, when the timeout has fired and before
// the timeout signal is sent: started by start with hookEnv's environment
// (base: contain's own), it is given at most o.Grace, then ended with
// what it started. It returns when the hook is over, at most o.Grace
// plus hookKillWait after it started. Nothing of the hook changes how
// the run ends. A grace period of 0 leaves the hook no time: it is not
// run.
func runHook(o *Options, base []string, commandPID, containPID int, start hookStarter) {
	if o.OnTimeout == "" {
		return
	}
	log := o.logger()
	if o.Grace <= 0 {
		log("on-timeout: not running %s: the grace period is 0 (-g 0), which leaves it no time", o.OnTimeout)
		return
	}
	log("on-timeout: running %s", o.OnTimeout)
	began := time.Now()
	h, err := start(o.OnTimeout, hookEnv(base, commandPID, o.Tag, containPID))
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
	case <-time.After(hookKillWait):
		log("on-timeout: still running %v after it was ended; going on without it", hookKillWait)
	}
}
