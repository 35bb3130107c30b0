//go:build linux || darwin

package run

import (
	"os"
	"os/signal"
	"runtime"
	"sync"
	"syscall"

	"golang.org/x/sys/unix"

	"github.com/contain-cli/contain/internal/guard"
	"github.com/contain-cli/contain/internal/sigcatch"
	"github.com/contain-cli/contain/internal/signals"
)

// stopRequest reports whether sig, sent to contain, means "stop": it is
// forwarded, and the group is killed if COMMAND is still running a grace
// period later.
func stopRequest(sig unix.Signal) bool {
	return sig == unix.SIGINT || sig == unix.SIGTERM || sig == unix.SIGHUP || sig == unix.SIGQUIT
}

// subscription is the signal subscription the next Run takes over. It may
// start early (PrepareRun), in parallel with the parsing of options.
var subscription struct {
	mu   sync.Mutex
	sigs chan os.Signal
	done chan struct{} // closed when the subscription is in force
	all  bool          // signals.ForwardedLater is caught too (sigcatch)
}

// PrepareRun keeps the main goroutine on the main thread, starts the crash
// guard and starts subscribing to the signals that would end contain, so
// that Run does not wait for either (the guard's fork and exec, and the
// runtime's round trip per subscribed signal, are the slowest steps of
// contain run's set-up). The guard's files are made here, and another
// thread starts it (guard.Prepare): a goroutine takes a while to run, and
// the guard's exec is what COMMAND's start waits for. Until Run starts
// COMMAND, the signals queue.
// contain's main calls it first thing. It also gives contain run back the
// RLIMIT_NOFILE it was started with (ownNofile), for its children.
//
// The main thread is the thread group leader: the kernel gives orphans to
// the leader of a subreaper, so the reaper, which waits with __WNOTHREAD,
// must run there (and Pdeathsig needs a thread that lives as long as
// contain: the leader does). Every other goroutine, the one that starts the
// crash guard included, then runs on other threads, so the guard is not
// among the children the reaper waits for. main starts on the main thread
// but may move once it blocks, hence first thing. (Locking in an init
// function would do, for every command, and costs contain run -- true 5%.)
func PrepareRun() *Prepared {
	runtime.LockOSThread()
	return prepareRun(false)
}

// PrepareRunInInit is PrepareRun for contain's own main, which runs
// contain run from an init function (internal/earlyrun) and exits before
// package initialisation is over: until then the runtime keeps the main
// goroutine on the main thread itself, and neither this nor Run locks it
// (the first runtime.LockOSThread starts a thread of the runtime's,
// a fiftieth of contain run -- true).
func PrepareRunInInit() *Prepared {
	if !onMainThread() {
		return PrepareRun() // not on the main thread after all: lock it (Run then says so)
	}
	return prepareRun(true)
}

func prepareRun(inInit bool) *Prepared {
	ownNofile()
	p := &Prepared{guardDone: make(chan struct{}), inInit: inInit}
	start := guard.Prepare()
	go func() {
		p.guard, p.guardErr = start()
		close(p.guardDone)
	}()
	p.prepareShim()
	subscribe(true)
	return p
}

// Prepared is what PrepareRun started for the one Run of contain's own
// main (Options.Prepared): the crash guard, and on Linux the shim. A Run
// without it (a test binary's: its executable is not contain, and cannot
// be the guard) has neither, and stops its signal subscription when done.
// With it, the process exits once Run returns, so Run leaves the
// subscription in force: signal.Stop costs a round trip between two
// runtime threads per signal, like subscribing (measured: 0.5-0.8 ms of
// contain run -- true); a signal that comes after the group is closed
// changes nothing.
type Prepared struct {
	guardDone chan struct{} // closed once guard or guardErr is set
	guard     *guard.Guard
	guardErr  error
	taken     bool // a Run took it, or Drop dropped it
	inInit    bool // PrepareRunInInit: the runtime keeps Run's goroutine on the main thread
	preparedOS
}

// Drop ends what PrepareRun started if no Run took it (--detach, a bad
// option, help), so that nothing of it outlives contain. A nil p drops
// nothing.
func (p *Prepared) Drop() {
	if g := p.takeGuard(nopLog); g != nil {
		g.Stop()
	}
	p.dropShim()
}

// takeGuard waits for the guard that PrepareRun started and hands it to
// one Run; nil when there is none.
func (p *Prepared) takeGuard(log Logger) *guard.Guard {
	if p == nil || p.taken {
		return nil
	}
	p.taken = true
	<-p.guardDone
	if p.guardErr != nil {
		log("cannot start the crash guard: %v (if contain is killed, run contain reap)", p.guardErr)
	}
	return p.guard
}

// subscribe starts the subscription, once. contain's own main (catch)
// catches every forwarded signal the Go runtime does not need for itself
// at once, with handlers of its own (package sigcatch: one system call per
// signal, where os/signal takes a round trip between two threads), and
// subscribes the rest with os/signal; it keeps them until it exits. A Run
// in another program (a test's), or where sigcatch has no handler,
// subscribes with os/signal, the first signals now and the later ones once
// COMMAND runs.
func subscribe(catch bool) {
	subscription.mu.Lock()
	defer subscription.mu.Unlock()
	if subscription.sigs != nil {
		return
	}
	sigs, done := make(chan os.Signal, 64), make(chan struct{})
	subscription.sigs, subscription.done = sigs, done
	first := signals.NotIgnored(signals.ForwardedFirst)
	if catch {
		var own []syscall.Signal
		var runtimes []os.Signal
		for _, s := range append(first, signals.ForwardedLater...) {
			if signals.RuntimeOwn(s) {
				runtimes = append(runtimes, s)
			} else {
				own = append(own, s.(syscall.Signal))
			}
		}
		if sigcatch.Catch(own, sigs) == nil {
			subscription.all = true
			// No round trip for these: the runtime handles them itself.
			signal.Notify(sigs, runtimes...)
			close(done)
			return
		}
	}
	go func() {
		signal.Notify(sigs, first...)
		close(done)
	}()
}

// takeSubscription hands the prepared subscription to one Run, and whether
// it catches signals.ForwardedLater too.
func takeSubscription() (chan os.Signal, chan struct{}, bool) {
	subscribe(false)
	subscription.mu.Lock()
	defer subscription.mu.Unlock()
	sigs, done, all := subscription.sigs, subscription.done, subscription.all
	subscription.sigs, subscription.done, subscription.all = nil, nil, false
	return sigs, done, all
}
