//go:build linux || darwin

package testtool

import (
	"os"
	"os/exec"
	"testing"
	"time"
)

// Alive: this process is; a child that has exited is not, a zombie not
// yet reaped or reaped.
func TestAlive(t *testing.T) {
	if !Alive(os.Getpid()) {
		t.Errorf("this process %d is not alive", os.Getpid())
	}
	cmd := exec.Command("sh", "-c", "exit 0")
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	pid := cmd.Process.Pid
	for deadline := time.Now().Add(10 * time.Second); Alive(pid); time.Sleep(10 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("the exited child %d, a zombie, is alive", pid)
		}
	}
	cmd.Wait()
	if Alive(pid) {
		t.Errorf("the reaped child %d is alive", pid)
	}
}
