package proc

import (
	"github.com/contain-cli/contain/session"
)

// Listing is every visible tagged process, and how many processes could not
// be read, by reason (they may carry the tag; they are not guessed at).
type Listing struct {
	Procs      []session.Process
	Unreadable map[string]int
	// Registry says why some of contain's registries could not be read
	// (ListForReap); nil when all were.
	Registry error
}
