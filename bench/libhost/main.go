// Command libhost is a host of package containment for the benchmarks:
// libhost lib COMMAND... runs COMMAND in a Group and waits for it;
// libhost cmd CONTAIN COMMAND... runs CONTAIN run -- COMMAND... and waits
// for it: the same host, paying for the library or for the command.
package main

import (
	"context"
	"fmt"
	"os"
	"os/exec"

	"github.com/contain-cli/contain/containment"
)

func main() {
	containment.Main()
	if len(os.Args) < 3 {
		fmt.Fprintln(os.Stderr, "usage: libhost lib COMMAND... | libhost cmd CONTAIN COMMAND...")
		os.Exit(2)
	}
	switch os.Args[1] {
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

func fail(err error) {
	fmt.Fprintln(os.Stderr, "libhost:", err)
	os.Exit(1)
}
