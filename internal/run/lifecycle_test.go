package run

import (
	"errors"
	"slices"
	"strconv"
	"strings"
	"testing"
)

// fakeSystem records the lifecycle's steps; fail names the step that
// fails.
type fakeSystem struct {
	fail  string
	steps []string
}

func (f *fakeSystem) step(name string, undo *cleanups) error {
	f.steps = append(f.steps, name)
	if undo != nil {
		undo.add(func() { f.steps = append(f.steps, "undo "+name) })
	}
	if f.fail == name {
		return errors.New(name + " failed")
	}
	return nil
}

func (f *fakeSystem) prepare(undo *cleanups) ([]string, error) {
	return []string{"layer"}, f.step("prepare", undo)
}
func (f *fakeSystem) setLimits() error { return f.step("limits", nil) }
func (f *fakeSystem) start(undo *cleanups) (int, error) {
	if err := f.step("start", undo); err != nil {
		return 0, err
	}
	return 42, nil
}
func (f *fakeSystem) abandon() { f.step("abandon", nil) }
func (f *fakeSystem) begin(layers []string, undo *cleanups) {
	f.step("begin "+strings.Join(layers, ","), undo)
}
func (f *fakeSystem) supervise() { f.step("supervise", nil) }
func (f *fakeSystem) result() Result {
	f.step("result", nil)
	return Result{Pid: 42, Exited: true}
}

// TestLifecycle: the steps in their order on every OS (the limits only
// when one is asked for); a step that fails
// ends the run there, the group made for it abandoned, COMMAND's PID told
// only once it runs, and everything undone, last first, whatever failed.
func TestLifecycle(t *testing.T) {
	for _, c := range []struct {
		fail string
		want []string
	}{
		{"", []string{"prepare", "limits", "start", "started 42", "begin layer", "supervise", "result", "undo begin layer", "undo start", "undo prepare"}},
		{"no limits", []string{"prepare", "start", "started 42", "begin layer", "supervise", "result", "undo begin layer", "undo start", "undo prepare"}},
		{"prepare", []string{"prepare", "undo prepare"}},
		{"limits", []string{"prepare", "limits", "abandon", "undo prepare"}},
		{"start", []string{"prepare", "limits", "start", "abandon", "undo start", "undo prepare"}},
	} {
		f := &fakeSystem{fail: c.fail}
		res, err := lifecycle(f, c.fail != "no limits", func(pid int) { f.steps = append(f.steps, "started "+strconv.Itoa(pid)) })
		if !slices.Equal(f.steps, c.want) {
			t.Errorf("failing %q: steps\n %q\nwant\n %q", c.fail, f.steps, c.want)
		}
		switch {
		case (c.fail == "" || c.fail == "no limits") && (err != nil || res.Pid != 42 || !res.Exited):
			t.Errorf("a run: %+v, %v", res, err)
		case c.fail != "" && c.fail != "no limits" && (err == nil || !strings.Contains(err.Error(), c.fail)):
			t.Errorf("failing %q: %v", c.fail, err)
		}
	}
}
