package reap

import "github.com/contain-cli/contain/session"

// registeredTarget: Windows has no registry (registry_none.go), so no
// process is found through one.
func (e *reaper) registeredTarget(c session.Choice) *target { return e.choiceTarget(c) }
