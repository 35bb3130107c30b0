//go:build linux || darwin

package containment_test

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"time"

	"github.com/contain-cli/contain/containment"
)

// A command that leaves a background job behind: the job is the Group's
// session's, ended by Close at the latest (Group.Wait ends what the
// command left in its process group as it ends).
func ExampleGroup_Start() {
	g, err := containment.NewGroup(containment.Options{Originator: "EXAMPLE", Grace: 500 * time.Millisecond})
	if err != nil {
		fmt.Println(err)
		return
	}
	cmd := exec.Command("sh", "-c", "sleep 300 & echo started")
	cmd.Stdout = os.Stdout
	if err := g.Start(cmd); err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println("wait:", cmd.Wait())
	if _, err := g.Close(context.Background()); err != nil {
		fmt.Println(err)
	}
	// Output:
	// started
	// wait: <nil>
}

// Wait says how a command ended: its code, its signal, a timeout. The
// command is the program's own child: cmd.Process, Pid.
func ExampleGroup_Wait() {
	g, err := containment.NewGroup(containment.Options{Originator: "EXAMPLE", Timeout: 200 * time.Millisecond})
	if err != nil {
		fmt.Println(err)
		return
	}
	defer g.Close(context.Background())
	cmd := exec.Command("sleep", "300")
	if err := g.Start(cmd); err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println("the command's own PID:", g.Pid(cmd) == cmd.Process.Pid)
	var ee *containment.ExitError
	if err := g.Wait(cmd); errors.As(err, &ee) {
		fmt.Println("timed out:", ee.TimedOut, "status:", ee.Status, "signal:", ee.Signal, "holder ended:", ee.HolderEnded)
	}
	// Output:
	// the command's own PID: true
	// timed out: true status: 124 signal: terminated holder ended: false
}

// Close ends what is still running, and with Options.Reports says what
// it ended.
func ExampleGroup_Close() {
	g, err := containment.NewGroup(containment.Options{Originator: "EXAMPLE", Grace: 500 * time.Millisecond, Reports: true})
	if err != nil {
		fmt.Println(err)
		return
	}
	cmd := exec.Command("sh", "-c", "sleep 300 & exec sleep 301")
	if err := g.Start(cmd); err != nil {
		fmt.Println(err)
		return
	}
	time.Sleep(200 * time.Millisecond)
	reports, err := g.Close(context.Background())
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println("wait:", cmd.Wait())
	for _, r := range reports {
		fmt.Println("ended by contain:", len(r.EndedByContain))
	}
	// Output:
	// wait: signal: terminated
	// ended by contain: 2
}

// Wait, from anywhere, for a session to end: here this program's own
// Group's, by its tag, while the Group is closed.
func ExampleWait() {
	g, err := containment.NewGroup(containment.Options{Originator: "EXAMPLE"})
	if err != nil {
		fmt.Println(err)
		return
	}
	cmd := exec.Command("sh", "-c", "sleep 0.3 & sleep 0.1")
	if err := g.Start(cmd); err != nil {
		fmt.Println(err)
		return
	}
	tag := g.Tag()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	go g.Close(ctx)
	left, err := containment.Wait(ctx, []string{tag}, nil, false)
	fmt.Println(len(left), err)
	cmd.Wait()
	// Output:
	// 0 <nil>
}
