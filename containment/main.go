package containment

import (
	"io"
	"os"
	"sync"

	"github.com/contain-cli/contain/internal/entry"
	"github.com/contain-cli/contain/internal/guard"
	"github.com/contain-cli/contain/internal/layers"
	"github.com/contain-cli/contain/internal/nosigpipe"
	"github.com/contain-cli/contain/internal/run"
	"github.com/contain-cli/contain/internal/runcmd"
	"github.com/contain-cli/contain/internal/shim"
	"github.com/contain-cli/contain/internal/status"
	"github.com/contain-cli/contain/internal/text"
)

// supervisorCommand is the first argument of a copy of the program that
// holds one command (Group.Start).
const supervisorCommand = "__contain_group"

// pipesVar names the copy's two pipes: the one whose closing tells it to
// close its group, on which its orders come first, and the one it writes
// to (and holds until it ends). It only says where they are: the copy
// proves them and takes its orders from them (takeOrders).
const pipesVar = "CONTAIN_GROUP_PIPES"

// Main runs what a copy of the program is for, and exits, when the
// program was run again by this package (a Group's copy that holds a
// command, or the crash guard or the shim that copy starts); otherwise it
// returns at once. Call it as the first statement of main.
//
// Each of them first proves that it was started so, by descriptors that
// only its own host or contain hands it; started otherwise (by hand, or
// by another user through this program), it does nothing, says so in one
// line on stderr and exits with status 122.
func Main() {
	if len(os.Args) < 2 {
		return
	}
	switch os.Args[1] {
	case guard.Arg:
		os.Exit(guard.Main(os.Args[2:]))
	case shim.Arg:
		os.Exit(shim.Main(os.Args[2:]))
	case supervisorCommand:
		supervise(false)
	}
}

// pipes are the copy's two pipes, kept from the garbage collector.
var pipes []*os.File

// supervise is the copy: contain run on the command, told to stop when the
// program's end of the stop pipe closes, its own lines (and -d's PID) sent
// to the program through the other pipe. inInit: it runs from an init
// function (init_unix.go), where the runtime keeps it on the main thread.
//
// Its settings are its orders, from the Group's Options (takeOrders): it
// reads no option from the environment it runs with, which is its
// command's, and no CONTAIN_DISABLE. Its argv only shows them to ps.
func supervise(inInit bool) {
	runcmd.IgnoreEnvironment()
	layers.Ignore()
	v := os.Getenv(pipesVar)
	os.Unsetenv(pipesVar)
	if err := provePipes(v); err != nil {
		os.Exit(entry.Refuse("this copy of the program (package containment)", err))
	}
	// Proved: the run's set-up starts while the orders are read.
	var prepared *run.Prepared
	if inInit {
		prepared = run.PrepareRunInInit()
	} else {
		prepared = run.PrepareRun()
	}
	args, err := takeOrders(v)
	if err != nil {
		prepared.Drop()
		os.Exit(entry.Refuse("this copy of the program (package containment)", err))
	}
	stop, out, err := openPipes(v)
	if err != nil {
		text.Fprintf(nosigpipe.Stderr(), "contain: a copy of this program run by package containment without its pipes (%v)\n", err)
		os.Exit(status.Failed)
	}
	// Held to the end: a pipe the garbage collector closed would tell the
	// program this copy had ended (QuietPipe writes to the descriptor).
	pipes = []*os.File{stop, out}
	go func() {
		io.Copy(io.Discard, stop)
		requestStop()
	}()
	w := &lineWriter{w: nosigpipe.Pipe(out)}
	code, ok := runcmd.Main(append([]string{"contain"}, args...), prepared, w.prefixed("pid "), w.prefixed("log "))
	if !ok {
		code = status.Failed
	}
	runcmd.Exit(code)
}

// lineWriter writes whole lines to the program, each with its kind.
type lineWriter struct {
	mu sync.Mutex
	w  io.Writer
}

type prefixed struct {
	l      *lineWriter
	prefix string
}

func (l *lineWriter) prefixed(p string) io.Writer { return prefixed{l, p} }

func (p prefixed) Write(b []byte) (int, error) {
	p.l.mu.Lock()
	defer p.l.mu.Unlock()
	var buf []byte
	for _, line := range splitLines(b) {
		buf = append(append(append(buf, p.prefix...), line...), '\n')
	}
	if _, err := p.l.w.Write(buf); err != nil {
		return 0, err
	}
	return len(b), nil
}

// splitLines splits b into its lines, without their newlines.
func splitLines(b []byte) [][]byte {
	var out [][]byte
	for len(b) > 0 {
		i := 0
		for i < len(b) && b[i] != '\n' {
			i++
		}
		out = append(out, b[:i])
		if i < len(b) {
			i++
		}
		b = b[i:]
	}
	return out
}
