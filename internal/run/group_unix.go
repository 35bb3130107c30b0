//go:build linux || darwin

package run

import (
	"errors"

	"golang.org/x/sys/unix"

	"github.com/contain-cli/contain/report"
)

// errNotInGroup: release was asked of a process outside the run's group.
var errNotInGroup = errors.New("not in the run's cgroup: contain moves only what it put there")

// group is the kernel's own hold on every process of the session, where
// the OS gives one: a cgroup on Linux. Where there is none (macOS; Linux
// as an ordinary user, or when the cgroup is refused) noGroup stands in,
// and the tracker, the subreaper and the shim do the work.
type group interface {
	name() string                         // for -v and the report's layers
	procs() []int                         // the processes in it now
	holds(pid int) error                  // nil while pid is in it
	kill() bool                           // ends every process in it at once; false: could not
	populated() bool                      // a live process is in it (an error counts as yes)
	emptied() bool                        // removed if it is empty now; true: it is gone
	remove()                              // removed, waiting for it to empty
	resources(res *report.Resources) bool // what it accounted; false: nothing
	release(pid int) (string, error)      // moved out of it (a daemon --allow-daemons spares): where to ("": nowhere needed)
}

// noGroup is the group of a run the kernel holds nothing for.
type noGroup struct{}

func (noGroup) name() string                     { return "" }
func (noGroup) procs() []int                     { return nil }
func (noGroup) holds(int) error                  { return unix.ESRCH }
func (noGroup) kill() bool                       { return false }
func (noGroup) populated() bool                  { return false }
func (noGroup) emptied() bool                    { return true }
func (noGroup) remove()                          {}
func (noGroup) resources(*report.Resources) bool { return false }
func (noGroup) release(int) (string, error)      { return "", nil }
