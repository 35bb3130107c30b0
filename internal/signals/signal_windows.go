package signals

import (
	"strconv"
	"syscall"
)

// Windows has no POSIX signals. A signal option names how COMMAND is asked
// to stop, and only what Windows can deliver is accepted:
//
//	INT (2)               CTRL_C_EVENT to COMMAND's console process group
//	TERM (15), BREAK (21) CTRL_BREAK_EVENT to COMMAND's console process group
//	KILL (9)              the job (or, for reap, the process) is terminated
//	0                     nothing is sent
//
// BREAK is the number the C runtime gives SIGBREAK.
const Break = syscall.Signal(21)

var signalNames = map[string]syscall.Signal{
	"INT": syscall.SIGINT, "TERM": syscall.SIGTERM, "BREAK": Break, "KILL": syscall.SIGKILL,
}

const maxSignal = 21

const signalHint = ": Windows can deliver INT (CTRL_C_EVENT), TERM or BREAK (CTRL_BREAK_EVENT), KILL (terminate) and 0"

func signalNumber(n int) bool {
	if n == 0 {
		return true
	}
	for _, s := range signalNames {
		if int(s) == n {
			return true
		}
	}
	return false
}

func signalByName(name string) (syscall.Signal, bool) {
	sig, ok := signalNames[name]
	return sig, ok
}

// Name names a signal for messages.
func Name(sig syscall.Signal) string {
	for n, s := range signalNames {
		if s == sig {
			return "SIG" + n
		}
	}
	return strconv.Itoa(int(sig))
}
