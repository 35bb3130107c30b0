//go:build linux || darwin

package containment_test

import (
	"context"
	"errors"
	"os/exec"
	"testing"
	"time"

	"github.com/contain-cli/contain/containment"
	"github.com/contain-cli/contain/session"
)

// TestWait: Wait holds while the session's processes run, and says which
// when its context ends first; once the group is closed it returns, and
// nothing of the session is left.
func TestWait(t *testing.T) {
	g, err := containment.NewGroup(containment.Options{Originator: "WAITTEST", Grace: 200 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command("sh", "-c", "sleep 300 & exec sleep 301")
	if err := g.Start(cmd); err != nil {
		t.Fatal(err)
	}
	defer g.Close(context.Background())
	tag := g.Tag()
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(20 * time.Millisecond) {
		l, err := containment.Sessions(session.Filter{Values: []string{tag}})
		if err != nil {
			t.Fatal(err)
		}
		if len(l.Sessions) == 1 && len(l.Sessions[0].Processes) == 2 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the session %s never listed its two processes: %+v", tag, l.Sessions)
		}
	}
	ctx, cancel := context.WithTimeout(context.Background(), 300*time.Millisecond)
	defer cancel()
	left, err := containment.Wait(ctx, []string{tag}, nil, false)
	if !errors.Is(err, context.DeadlineExceeded) || len(left[tag]) != 2 {
		t.Fatalf("Wait on a running session: %v, %v; want its two processes and the deadline", left, err)
	}
	go g.Close(context.Background())
	ctx2, cancel2 := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel2()
	if left, err := containment.Wait(ctx2, []string{tag}, nil, false); err != nil || len(left) != 0 {
		t.Fatalf("Wait while the group is closed: %v, %v", left, err)
	}
	if l, _ := containment.Sessions(session.Filter{Values: []string{tag}}); len(l.Sessions) != 0 {
		t.Errorf("Wait returned with %s still there: %+v", tag, l.Sessions)
	}
	cmd.Wait()
}

// TestStop: Stop asks a live session's originator (here the Group's
// holder, a copy of this test binary) to close it, and returns once
// nothing of it runs.
func TestStop(t *testing.T) {
	g, err := containment.NewGroup(containment.Options{Originator: "STOPTEST", Grace: 200 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	defer g.Close(context.Background())
	cmd := exec.Command("sh", "-c", "sleep 300 & exec sleep 301")
	if err := g.Start(cmd); err != nil {
		t.Fatal(err)
	}
	tag := g.Tag()
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(20 * time.Millisecond) {
		if l, _ := containment.Sessions(session.Filter{Values: []string{tag}}); len(l.Sessions) == 1 && len(l.Sessions[0].Processes) == 2 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the session %s never listed its two processes", tag)
		}
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	out, done, err := containment.Stop(ctx, containment.StopOptions{Sessions: []string{tag}})
	if err != nil || !done || len(out) != 1 || out[0].Outcome != "asked" || len(out[0].Running) != 0 {
		t.Fatalf("Stop: %+v, done %v, %v; want %s asked and ended", out, done, err, tag)
	}
	if err := cmd.Wait(); err == nil || err.Error() != "signal: terminated" {
		t.Errorf("the group's cmd.Wait: %v, want signal: terminated (COMMAND ended by the SIGTERM)", err)
	}
	if l, _ := containment.Sessions(session.Filter{Values: []string{tag}}); len(l.Sessions) != 0 {
		t.Errorf("Stop returned with %s still there: %+v", tag, l.Sessions)
	}
}
