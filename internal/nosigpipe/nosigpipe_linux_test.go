package nosigpipe

import (
	"errors"
	"io"
	"os"
	"os/signal"
	"runtime"
	"syscall"
	"testing"
	"time"
)

// TestNoSIGPIPE: a write to a pipe whose reader is gone fails with EPIPE
// and raises no SIGPIPE that the process would receive, through Writer
// and through Locked (from a goroutine locked to its thread).
func TestNoSIGPIPE(t *testing.T) {
	sigs := make(chan os.Signal, 8)
	signal.Notify(sigs, syscall.SIGPIPE)
	defer signal.Stop(sigs)
	for name, writer := range map[string]func(*os.File) io.Writer{"Writer": Writer, "Locked": Locked} {
		r, w, err := os.Pipe()
		if err != nil {
			t.Fatal(err)
		}
		r.Close()
		done := make(chan error)
		go func() {
			runtime.LockOSThread()
			defer runtime.UnlockOSThread()
			_, err := writer(w).Write([]byte("x"))
			done <- err
		}()
		if err := <-done; !errors.Is(err, syscall.EPIPE) {
			t.Errorf("%s: %v, want EPIPE", name, err)
		}
		w.Close()
		select {
		case s := <-sigs:
			t.Errorf("%s: the process received %v", name, s)
		case <-time.After(100 * time.Millisecond):
		}
	}
}
