// Command envhost is a program that embeds package containment as a CI
// agent does, for the tests: envhost TOOL VAR=VALUE... -- COMMAND... starts
// COMMAND in a group with the job's variables in cmd.Env (its own
// environment and the VAR=VALUEs), says "started" once it runs, and on
// "close" on its stdin closes the group and says "closed".
package main

import (
	"bufio"
	"context"
	"fmt"
	"os"
	"os/exec"
	"time"

	"github.com/contain-cli/contain/containment"
)

func main() {
	containment.Main()
	if len(os.Args) < 4 {
		fail(fmt.Errorf("usage: envhost TOOL VAR=VALUE... -- COMMAND..."))
	}
	tool, rest := os.Args[1], os.Args[2:]
	var job []string
	for len(rest) > 0 && rest[0] != "--" {
		job, rest = append(job, rest[0]), rest[1:]
	}
	if len(rest) < 2 {
		fail(fmt.Errorf("no COMMAND"))
	}
	g, err := containment.NewGroup(containment.Options{Originator: tool, Grace: time.Second, Log: os.Stderr})
	if err != nil {
		fail(err)
	}
	cmd := exec.Command(rest[1], rest[2:]...)
	cmd.Env = append(os.Environ(), job...)
	cmd.Stdout, cmd.Stderr = os.Stderr, os.Stderr
	if err := g.Start(cmd); err != nil {
		fail(err)
	}
	fmt.Println("started")
	sc := bufio.NewScanner(os.Stdin)
	for sc.Scan() && sc.Text() != "close" {
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if _, err := g.Close(ctx); err != nil {
		fail(err)
	}
	cmd.Wait()
	fmt.Println("closed")
}

func fail(err error) {
	fmt.Fprintln(os.Stderr, "envhost:", err)
	os.Exit(1)
}
