//go:build unix

// Command turns times programs in turns, the way BenchmarkStartup does,
// for builds side by side: each round runs every program once, the order
// rotating, and the figure is each program's median as a ratio to the
// first one's.
//
//	go run ./bench/turns 300 root /path/baseline true \; old run -- true \; new run -- true
//
// "nobody" in place of "root" runs them as uid and gid 65534 (turns must
// then run as root). Words of the form NAME=VALUE before a program are
// added to its environment.
package main

import (
	"fmt"
	"os"
	"os/exec"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"time"
)

func main() {
	if len(os.Args) < 4 {
		fmt.Fprintln(os.Stderr, "usage: turns ROUNDS root|nobody PROG ARGS... [; PROG ARGS...]...")
		os.Exit(2)
	}
	rounds, err := strconv.Atoi(os.Args[1])
	if err != nil || rounds < 1 {
		fmt.Fprintln(os.Stderr, "turns: ROUNDS must be a positive number")
		os.Exit(2)
	}
	nobody := os.Args[2] == "nobody"
	var progs [][]string
	cur := []string{}
	for _, a := range os.Args[3:] {
		if a == ";" {
			progs = append(progs, cur)
			cur = []string{}
			continue
		}
		cur = append(cur, a)
	}
	progs = append(progs, cur)
	times := make([][]time.Duration, len(progs))
	for i := range rounds {
		for j := range progs {
			k := (i + j) % len(progs)
			argv := progs[k]
			var env []string
			for len(argv) > 1 && strings.Contains(argv[0], "=") {
				env, argv = append(env, argv[0]), argv[1:]
			}
			cmd := exec.Command(argv[0], argv[1:]...)
			cmd.Env = append(os.Environ(), env...)
			if nobody {
				cmd.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: 65534, Gid: 65534}}
			}
			start := time.Now()
			if err := cmd.Run(); err != nil {
				fmt.Fprintf(os.Stderr, "turns: %q: %v\n", argv, err)
				os.Exit(1)
			}
			times[k] = append(times[k], time.Since(start))
		}
	}
	median := func(d []time.Duration) time.Duration {
		s := slices.Clone(d)
		slices.Sort(s)
		return s[len(s)/2]
	}
	base := median(times[0])
	for k, p := range progs {
		m := median(times[k])
		fmt.Printf("%-60.60s %.3f ms  ratio %.3f\n", strings.Join(p, " "), float64(m)/1e6, float64(m)/float64(base))
	}
}
