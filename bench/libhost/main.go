// Command libhost is a host of package containment for the benchmarks:
// libhost lib COMMAND... runs COMMAND in a Group and waits for it;
// libhost cmd CONTAIN COMMAND... runs CONTAIN run -- COMMAND... and waits
// for it: the same host, paying for the library or for the command.
// libhost each N lib|exec COMMAND... starts and waits for COMMAND N times
// in this one process, through a Group or through plain os/exec, and
// prints the median time per command in nanoseconds: what a Go program
// pays per command, without the program's own start.
package main

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"slices"
	"strconv"
	"time"

	"github.com/contain-cli/contain/containment"
)

func main() {
	containment.Main()
	if len(os.Args) < 3 {
		fmt.Fprintln(os.Stderr, "usage: libhost lib COMMAND... | libhost cmd CONTAIN COMMAND...")
		os.Exit(2)
	}
	switch os.Args[1] {
	case "each":
		each(os.Args[2:])
	case "lib":
		g, err := containment.NewGroup(containment.Options{})
		if err != nil {
			fail(err)
		}
		cmd := exec.Command(os.Args[2], os.Args[3:]...)
		if err := g.Start(cmd); err != nil {
			fail(err)
		}
		if err := cmd.Wait(); err != nil {
			fail(err)
		}
		if _, err := g.Close(context.Background()); err != nil {
			fail(err)
		}
	case "cmd":
		cmd := exec.Command(os.Args[2], append([]string{"run", "--"}, os.Args[3:]...)...)
		if err := cmd.Run(); err != nil {
			fail(err)
		}
	}
}

// each is libhost each N lib|exec COMMAND...
func each(args []string) {
	n, err := strconv.Atoi(args[0])
	if err != nil || n < 1 || len(args) < 3 {
		fail(fmt.Errorf("usage: libhost each N lib|exec COMMAND..."))
	}
	var g *containment.Group
	if args[1] == "lib" {
		if g, err = containment.NewGroup(containment.Options{}); err != nil {
			fail(err)
		}
		defer g.Close(context.Background())
	}
	times := make([]time.Duration, 0, n)
	for range n {
		cmd := exec.Command(args[2], args[3:]...)
		began := time.Now()
		if g != nil {
			if err := g.Start(cmd); err != nil {
				fail(err)
			}
			err = g.Wait(cmd)
		} else {
			err = cmd.Run()
		}
		if err != nil {
			fail(err)
		}
		times = append(times, time.Since(began))
	}
	slices.Sort(times)
	fmt.Println(int64(times[len(times)/2]))
}

func fail(err error) {
	fmt.Fprintln(os.Stderr, "libhost:", err)
	os.Exit(1)
}
