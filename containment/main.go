package containment

import (
	"bufio"
	"io"
	"os"
	"strconv"

	"github.com/contain-cli/contain/internal/dispatch"
	"github.com/contain-cli/contain/internal/entry"
	"github.com/contain-cli/contain/internal/layers"
	"github.com/contain-cli/contain/internal/nosigpipe"
	"github.com/contain-cli/contain/internal/proc"
	"github.com/contain-cli/contain/internal/run"
	"github.com/contain-cli/contain/internal/status"
	"github.com/contain-cli/contain/internal/text"
)

// pipesVar names the copy's two pipes: the one whose closing tells it to
// close its group, on which its orders come first, and the one it writes
// to (and holds until it ends). It only says where they are: the copy
// proves them and takes its orders from them (takeOrders).
const pipesVar = "CONTAIN_GROUP_PIPES"

// Main runs what a copy of the program is for, and exits, when the
// program was run again by this package (a Group's copy that holds a
// command, or the crash guard or the shim that copy starts); otherwise it
// returns at once.
//
// The package's init function does the same (init.go), before the
// program's own init functions and main run, so that any binary that
// links the package is a copy when run as one: a test binary without
// Main in its TestMain does not run its tests again. Main remains for
// programs written before that, and is harmless.
//
// Each of them first proves that it was started so, by descriptors that
// only its own host or contain hands it; started otherwise (by hand, or
// by another user through this program), it does nothing, says so in one
// line on stderr and exits with status 122.
func Main() { dispatch.Hidden(os.Args, false, supervise) }

// pipes are the copy's two pipes, kept from the garbage collector.
var pipes []*os.File

// supervise is the copy: the run its host's Spec asks for, told to close
// its group when the host's end of the stop pipe closes, its lines,
// COMMAND's PID and the Outcome sent to the host on the other pipe.
// inInit: it runs from an init function (init_unix.go), where the
// runtime keeps it on the main thread.
//
// Its settings are the Spec, all of them: it reads none from its argv or
// its environment, and no CONTAIN_DISABLE.
func supervise(inInit bool) {
	layers.Ignore()
	v := os.Getenv(pipesVar)
	os.Unsetenv(pipesVar)
	if err := provePipes(v); err != nil {
		os.Exit(entry.Refuse("this copy of the program (package containment)", err))
	}
	// Proved: the run's set-up starts while the Spec is read, the
	// command's own descriptors kept from it.
	handOn, drop := holdExtraFiles(v)
	var prepared *run.Prepared
	if inInit {
		prepared = run.PrepareRunInInit()
	} else {
		prepared = run.PrepareRun()
	}
	spec, err := takeSpec(v)
	if err != nil {
		prepared.Drop()
		os.Exit(entry.Refuse("this copy of the program (package containment)", err))
	}
	stop, out, err := openPipes(v)
	if err != nil {
		prepared.Drop()
		text.Fprintf(nosigpipe.Stderr(), "contain: a copy of this program run by package containment without its pipes (%v)\n", err)
		os.Exit(status.Failed)
	}
	// Held to the end: a pipe the garbage collector closed would tell the
	// host this copy had ended.
	pipes = []*os.File{stop, out}
	closed := make(chan struct{}, 1)
	members := make(chan proc.ID, 64)
	go func() {
		// After the Spec, a holder hears of each command the program
		// started in its session (frameMember); the pipe's end is the
		// program's Close, or its end.
		br := bufio.NewReader(stop)
		for {
			kind, b, err := readFrame(br)
			if err != nil {
				break
			}
			if id, ok := parseMember(b); kind == frameMember && ok {
				members <- id
			}
		}
		closed <- struct{}{}
	}()
	handOn()
	w := &frameWriter{w: nosigpipe.Pipe(out)}
	spec.Prepared, spec.Close, spec.Log, spec.Members = prepared, closed, w.lines(), members
	if spec.SendEvents {
		spec.Events = w.eventLines()
	}
	spec.Started = func(pid int) {
		drop()
		w.send(frameStarted, strconv.AppendInt(nil, int64(pid), 10))
	}
	spec.Held = func(in string) {
		drop()
		w.send(frameHeld, []byte(in))
	}
	o := run.Execute(spec, io.Discard, w.lines())
	w.send(frameOutcome, marshalOutcome(o))
	run.Exit(o)
}
