package job

import (
	"sync"
	"testing"
	"time"
	"unsafe"

	"golang.org/x/sys/windows"
)

// TestJobPortHandsOn: the job's one port hands each new process to
// watchNew's function, and the limits' messages to the port
// Notifications returned, in order, until Unforward, which hands on
// what came before it and nothing after.
func TestJobPortHandsOn(t *testing.T) {
	j, err := New()
	if err != nil {
		t.Fatal(err)
	}
	defer j.Close()
	var mu sync.Mutex
	var joined []int
	if err := j.watchNew(func(pid int) {
		mu.Lock()
		joined = append(joined, pid)
		mu.Unlock()
	}); err != nil {
		t.Fatal(err)
	}
	fwd, err := j.Notifications()
	if err != nil {
		t.Fatal(err)
	}
	defer windows.CloseHandle(fwd)
	ph := startHelper(t, j, "sleep")
	pid, err := windows.GetProcessId(ph)
	if err != nil {
		t.Fatal(err)
	}
	// What Windows posts when a limit is hit (Wine enforces none).
	for _, v := range []uintptr{11, 12} {
		procPostQueuedCompletionStatus.Call(uintptr(j.port), MsgMemoryLimit, jobKey, v)
	}
	j.Unforward()
	procPostQueuedCompletionStatus.Call(uintptr(j.port), MsgProcessLimit, jobKey, 13)
	windows.PostQueuedCompletionStatus(fwd, 0, 99, nil)
	var got []uintptr
	for {
		var msg uint32
		var key, value uintptr
		ok, _, err := procGetQueuedCompletionStatus.Call(uintptr(fwd), uintptr(unsafe.Pointer(&msg)),
			uintptr(unsafe.Pointer(&key)), uintptr(unsafe.Pointer(&value)), 5000)
		if ok == 0 {
			t.Fatalf("reading the limits' port: %v", err)
		}
		if key == 99 {
			break
		}
		if msg != MsgMemoryLimit || key != jobKey {
			t.Errorf("message %d key %d handed on", msg, key)
		}
		got = append(got, value)
	}
	if len(got) != 2 || got[0] != 11 || got[1] != 12 {
		t.Errorf("handed on %v, want [11 12] and nothing after Unforward", got)
	}
	deadline := time.Now().Add(5 * time.Second)
	for {
		mu.Lock()
		n := len(joined)
		first := 0
		if n > 0 {
			first = joined[0]
		}
		mu.Unlock()
		if n > 0 {
			if first != int(pid) {
				t.Errorf("watchNew got %d, the helper is %d", first, pid)
			}
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("watchNew was not told of the helper")
		}
		time.Sleep(10 * time.Millisecond)
	}
}
