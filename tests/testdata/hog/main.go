// Command hog is the tests' resource hog: it uses memory, CPU or
// processes as a real program would, for the limits tests.
//
//	hog mem STEP_MIB PAUSE_MS   allocate and touch STEP_MIB every PAUSE_MS, forever
//	hog spin                    use one CPU, forever
//	hog fork                    start itself as "hog sleep" again and again
//	hog sleep                   sleep forever
//	hog claimsocket             exit 0 if contain run's claim socket takes a connection
package main

import (
	"fmt"
	"os"
	"os/exec"
	"strconv"
	"time"
)

func main() {
	if len(os.Args) < 2 {
		fmt.Fprintln(os.Stderr, "usage: hog mem STEP_MIB PAUSE_MS | spin | fork | sleep")
		os.Exit(2)
	}
	switch os.Args[1] {
	case "mem":
		step, _ := strconv.Atoi(os.Args[2])
		pause, _ := strconv.Atoi(os.Args[3])
		var keep [][]byte
		for {
			b := make([]byte, step<<20)
			for i := 0; i < len(b); i += 4096 {
				b[i] = 1
			}
			keep = append(keep, b)
			time.Sleep(time.Duration(pause) * time.Millisecond)
		}
	case "spin":
		for n := 0; ; n++ {
		}
	case "fork":
		for {
			cmd := exec.Command(os.Args[0], "sleep")
			if err := cmd.Start(); err != nil {
				time.Sleep(10 * time.Millisecond)
				continue
			}
			go cmd.Wait()
		}
	case "claimsocket":
		claimSocket()
	case "sleep":
		// Not select {}: with no other goroutine the runtime takes that
		// for a deadlock and exits at once.
		for {
			time.Sleep(time.Hour)
		}
	}
	os.Exit(2)
}
