package run

import (
	"bytes"
	"os"
	"os/exec"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/contain-cli/contain/internal/proc"
	"github.com/contain-cli/contain/internal/testtool"
)

// TestRunHoldPIDNamespace runs the held-session tests (a library Group's
// engine) in a PID namespace whose processes' process group is led from
// outside it (unshare --pid --fork from a shell, as a developer tries a
// container): there every process's group reads 0. The close took a
// member's group 0 for COMMAND's and sent kill(-0, SIGSTOP), then
// kill(-0, SIGKILL): 0 is the caller's own group, so the program holding
// the session stopped or killed itself and the processes of its group
// (a fresh clone's CI under unshare hung so; this test saw its unshare
// killed).
// The namespace's first process is a shell, so that the test binary can
// be stopped as any process of it can.
func TestRunHoldPIDNamespace(t *testing.T) {
	testtool.Need(t, "unshare", "util-linux")
	argv := []string{"unshare", "--pid", "--fork", "--mount-proc", "--kill-child"}
	if os.Geteuid() != 0 {
		argv = append(argv[:1], append([]string{"--user", "--map-root-user"}, argv[1:]...)...)
	}
	argv = append(argv, "sh", "-c", `"$0" "$@"; exit $?`, os.Args[0], "-test.run", "^(TestRunHold|TestRunHoldMembersBeforeClose)$", "-test.count=1", "-test.v")
	cmd := exec.Command(argv[0], argv[1:]...)
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	// A group of its own, led from outside the namespace.
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	pgrp := cmd.Process.Pid
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	end := func() {
		syscall.Kill(-pgrp, syscall.SIGKILL)
		syscall.Kill(-pgrp, syscall.SIGCONT)
		<-done
	}
	deadline := time.Now().Add(5 * time.Minute)
	for {
		select {
		case err := <-done:
			if err != nil || !strings.Contains(out.String(), "--- PASS: TestRunHold ") {
				t.Fatalf("the held-session tests in the namespace: %v\n%s", err, out.String())
			}
			t.Logf("in the namespace:\n%s", out.String())
			return
		case <-time.After(50 * time.Millisecond):
		}
		if st, err := proc.ReadStat(pgrp, nil); err == nil && st.State == 'T' {
			end()
			t.Fatalf("the held session stopped its own process group (unshare, outside the namespace, is stopped):\n%s", out.String())
		}
		if time.Now().After(deadline) {
			end()
			t.Fatalf("the held-session tests in the namespace did not end in 5 minutes:\n%s", out.String())
		}
	}
}
