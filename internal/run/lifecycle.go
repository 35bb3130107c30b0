package run

// A run is one story on every OS, as tini's main reads: prepare the
// layers, set the limits, start COMMAND in its group, begin watching it,
// supervise it until it ends and the group is closed, then say how it
// ended. lifecycle tells the story once; an OS's runner (runner on Linux
// and macOS, winRunner on Windows) supplies each step as a system, its
// own components behind it, and a test supplies fakes
// (lifecycle_test.go).

// system is one OS's run, step by step.
type system interface {
	// prepare readies the layers that hold the group (and the crash
	// guard where there is one) and returns their names.
	prepare(undo *cleanups) (layers []string, err error)
	// setLimits sets the whole-tree limits asked for, where they can be
	// held (or refuses, --strict-limits); only called when one is.
	setLimits() error
	// start starts COMMAND in the group and returns its PID; abandon
	// undoes, after a failed start or limit, what prepare made that
	// outlives the run by itself (a cgroup).
	start(undo *cleanups) (pid int, err error)
	abandon()
	// begin starts what follows COMMAND while it runs: the watchers, the
	// account.
	begin(layers []string, undo *cleanups)
	// supervise runs the main loop until COMMAND has ended, then closes
	// the group: it returns once nothing of it is left.
	supervise()
	// result says how COMMAND ended, with what the run measured.
	result() Result
}

// cleanups are what a run undoes when it returns, last first.
type cleanups []func()

func (c *cleanups) add(f func()) { *c = append(*c, f) }

// run runs them; a pointer, so that a deferred run sees what was added
// after the defer.
func (c *cleanups) run() {
	for i := len(*c) - 1; i >= 0; i-- {
		(*c)[i]()
	}
}

// lifecycle is a run of sys, the same on every OS: limits says whether
// any limit is asked for (none: setLimits is not called, and nothing of
// the limits runs); started, when set, is told COMMAND's PID as soon as
// it runs.
func lifecycle(sys system, limits bool, started func(pid int)) (Result, error) {
	var undo cleanups
	defer undo.run()
	layers, err := sys.prepare(&undo)
	if err != nil {
		return Result{}, err
	}
	if limits {
		if err := sys.setLimits(); err != nil {
			sys.abandon()
			return Result{}, err
		}
	}
	pid, err := sys.start(&undo)
	if err != nil {
		sys.abandon()
		return Result{}, err
	}
	if started != nil {
		started(pid)
	}
	sys.begin(layers, &undo)
	sys.supervise()
	return sys.result(), nil
}
