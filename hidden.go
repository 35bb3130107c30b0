package main

import (
	"io"

	"github.com/contain-cli/contain/internal/proc"
	"github.com/contain-cli/contain/internal/text"
)

// reportHidden says on stderr, in one line, that /proc hides other users'
// processes from this user (mounted hidepid: proc.Hidden), so that their
// sessions are neither listed nor told to have ended: why is proc.Hidden.
func reportHidden(w io.Writer, why string) {
	if why != "" {
		text.Fprintf(w, "contain: %s, so their sessions are not listed\n", why)
	}
}

// hiddenHere is proc.Hidden; tests replace it.
var hiddenHere = proc.Hidden
