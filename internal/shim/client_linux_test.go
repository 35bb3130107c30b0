package shim

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"reflect"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/contain-cli/contain/internal/proc"
)

// pipeClient is a Client of no process: the test reads its orders
// (orders) and writes its records (records).
func pipeClient(t *testing.T, keeper bool) (c *Client, orders *os.File, records *os.File) {
	t.Helper()
	or, ow, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	sr, sw, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		for _, f := range []*os.File{or, ow, sr, sw} {
			f.Close()
		}
	})
	return &Client{pid: os.Getpid(), orders: ow, status: sr, lines: bufio.NewReader(sr), done: make(chan struct{}), keeper: keeper}, or, sw
}

// TestInherited: a descriptor contain inherited open (not close-on-exec)
// stays at its number for COMMAND, one of contain's own (close-on-exec)
// below it is closed, 0 to 2 are kept, and the shim's own go above them
// all.
func TestInherited(t *testing.T) {
	own, err := os.Open(os.DevNull) // close-on-exec, as Go opens every file
	if err != nil {
		t.Fatal(err)
	}
	defer own.Close()
	kept := 100
	for ; kept < 200; kept++ {
		if _, err := unix.FcntlInt(uintptr(kept), unix.F_GETFD, 0); err == unix.EBADF {
			break
		}
	}
	if err := unix.Dup3(int(own.Fd()), kept, 0); err != nil {
		t.Fatal(err)
	}
	defer unix.Close(kept)
	files, base := inherited()
	if base <= kept || len(files) != base {
		t.Fatalf("base %d, %d files; want above %d, one per number", base, len(files), kept)
	}
	if !slices.Equal(files[:3], []uintptr{0, 1, 2}) {
		t.Errorf("0 to 2: %v", files[:3])
	}
	if files[kept] != uintptr(kept) {
		t.Errorf("the inherited %d: %#x; want it at its number", kept, files[kept])
	}
	if fd := int(own.Fd()); fd < base && files[fd] != ^uintptr(0) {
		t.Errorf("contain's own %d: %#x; want closed", fd, files[fd])
	}
}

// TestClientBrief: the orders written as given, and the first record read
// as COMMAND's start: its PID, the errno of a start that failed, or
// what a shim that said anything else or ended said.
func TestClientBrief(t *testing.T) {
	for _, tc := range []struct {
		name    string
		records []Record
		pid     int
		errno   syscall.Errno
		err     string
	}{
		{name: "started", records: []Record{{Kind: Started, A: 4242}}, pid: 4242},
		{name: "failed", records: []Record{{Kind: Failed, A: int32(unix.ENOENT)}}, errno: unix.ENOENT},
		{name: "other", records: []Record{{Kind: Reaped, A: 7}}, err: "the shim said {Kind:5 A:7 B:0 C:0}"},
		{name: "ended", err: "the shim ended before starting COMMAND: EOF"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c, orders, records := pipeClient(t, false)
			for _, rec := range tc.records {
				if err := rec.Write(records); err != nil {
					t.Fatal(err)
				}
			}
			records.Close()
			pid, err := c.Brief([]byte("{}\n"))
			var ee *ExecError
			switch {
			case tc.errno != 0:
				if !errors.As(err, &ee) || ee.Errno != tc.errno || !errors.Is(err, tc.errno) {
					t.Errorf("Brief: %d, %v; want an ExecError of %v", pid, err, tc.errno)
				}
			case tc.err != "":
				if err == nil || err.Error() != tc.err || errors.As(err, &ee) {
					t.Errorf("Brief: %d, %v; want %q", pid, err, tc.err)
				}
			case err != nil || pid != tc.pid:
				t.Errorf("Brief: %d, %v; want %d", pid, err, tc.pid)
			}
			c.orders.Close()
			if b, _ := io.ReadAll(orders); string(b) != "{}\n" {
				t.Errorf("orders: %q", b)
			}
		})
	}
}

// TestClientRelay: the records after the start, each to its receiver in
// order, until the shim ends; CommandEnded says whether it said that
// COMMAND ended.
func TestClientRelay(t *testing.T) {
	for _, exits := range []bool{true, false} {
		c, _, records := pipeClient(t, false)
		recs := []Record{{Kind: Stopped, A: 0x137f}, {Kind: Reaped, A: 77, B: 9}}
		if exits {
			recs = append(recs, Record{Kind: Exited, A: 0x300, B: 1})
		}
		for _, rec := range recs {
			rec.Write(records)
		}
		records.Close()
		var got []string
		c.Relay(Receiver{
			Stopped: func(ws unix.WaitStatus) { got = append(got, fmt.Sprintf("stopped %v", ws.StopSignal())) },
			Exited: func(ws unix.WaitStatus, more bool) {
				got = append(got, fmt.Sprintf("exited %d, more %v", ws.ExitStatus(), more))
			},
			Reaped: func(pid int, ws unix.WaitStatus) { got = append(got, fmt.Sprintf("reaped %d: %v", pid, ws.Signal())) },
		})
		want := []string{"stopped stopped (signal)", "reaped 77: killed"}
		if exits {
			want = append(want, "exited 3, more true")
		}
		if !reflect.DeepEqual(got, want) {
			t.Errorf("relayed %q; want %q", got, want)
		}
		if ended := c.CommandEnded(); ended != exits {
			t.Errorf("CommandEnded: %v; want %v", ended, exits)
		}
	}
}

// TestClientSpare: a daemon spared is one line to contain __shim, and
// nothing to the keeper, which serves no --allow-daemons.
func TestClientSpare(t *testing.T) {
	for _, keeper := range []bool{false, true} {
		c, orders, _ := pipeClient(t, keeper)
		if err := c.Spare(12, 345); err != nil {
			t.Fatal(err)
		}
		c.orders.Close()
		want := "release 12 345\n"
		if keeper {
			want = ""
		}
		if b, _ := io.ReadAll(orders); string(b) != want {
			t.Errorf("keeper %v: orders %q; want %q", keeper, b, want)
		}
	}
}

// TestClientWatch: each child of the shim (here the test itself) but
// COMMAND is found, once, soon after it is one; Watch returns once the
// records have ended.
func TestClientWatch(t *testing.T) {
	c, _, _ := pipeClient(t, false)
	c.start = proc.StartOf(c.pid)
	var kids []*exec.Cmd
	for range 2 {
		k := exec.Command("sleep", "30")
		if err := k.Start(); err != nil {
			t.Skip(err)
		}
		defer func() { k.Process.Kill(); k.Wait() }()
		kids = append(kids, k)
	}
	found := make(chan proc.Entry, 10)
	returned := make(chan struct{})
	go func() {
		c.Watch(kids[0].Process.Pid, func(e proc.Entry) { found <- e })
		close(returned)
	}()
	select {
	case e := <-found:
		if e.PID != kids[1].Process.Pid || e.PPID != os.Getpid() || !strings.HasPrefix(e.Comm, "sleep") {
			t.Errorf("found %+v; want %d, a sleep", e, kids[1].Process.Pid)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("the child was not found")
	}
	time.Sleep(5 * WatchEvery)
	close(c.done)
	<-returned
	if len(found) != 0 {
		t.Errorf("found again: %+v", <-found)
	}
}
