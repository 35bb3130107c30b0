// Package entry guards the ways into contain that its user does not type:
// nothing of contain runs where the kernel set AT_SECURE (a set-user-ID or
// set-group-ID program, or one with file capabilities), and the hidden
// entries (the library's copy, the crash guard, the shim) act only on
// descriptors that their own contain handed them (Prove).
//
// Its init function makes the first check. Go initialises a package once
// its imports are, so every package that imports this one (internal/
// earlyrun, which runs contain run from its own init function, and
// package containment, whose init function runs the library's copy) runs
// nothing before it. It imports only the standard library, x/sys and
// internal/text, none of which does anything as it is initialised.
package entry

import (
	"os"
	"strconv"

	"github.com/contain-cli/contain/internal/text"
)

// Refused is the exit status of a refusal: contain run where AT_SECURE is
// set, or a hidden entry that its own contain did not start. It is none
// of contain run's own (124-127, 137) nor 1 or 2.
const Refused = 122

// secureLine is what a program that AT_SECURE marks says before it exits.
const secureLine = "contain: refusing to run: this program is set-user-ID, set-group-ID or has file capabilities (AT_SECURE), and contain acts only with the rights of the user who runs it\n"

func init() {
	if secure() {
		os.Stderr.WriteString(secureLine)
		os.Exit(Refused)
	}
}

// Secure reports whether the kernel set AT_SECURE for this program.
func Secure() bool { return secure() }

// Refuse says, in one line on stderr, that the hidden entry what will not
// run, and why, and returns Refused, the status to exit with.
func Refuse(what string, why error) int {
	text.Line(os.Stderr, "contain: ", what+" refused to run: "+why.Error()+" (it runs only when contain starts it)")
	return Refused
}

// badFd is a descriptor that is not what contain hands its entry.
type badFd struct {
	fd  int
	why string
}

func (e *badFd) Error() string { return "descriptor " + strconv.Itoa(e.fd) + " " + e.why }

// First is the first of errs that is not nil: the one a refusal names.
func First(errs ...error) error {
	for _, err := range errs {
		if err != nil {
			return err
		}
	}
	return nil
}
