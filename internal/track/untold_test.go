//go:build linux || darwin

package track

import (
	"errors"
	"syscall"
	"testing"

	"github.com/contain-cli/contain/internal/proc"
)

// TestUntoldUnsettled: a double fork read mid-change. The middle (100,
// PPID 1) ends while the scan reads it, and its child (101, the one that
// stays) still names it as parent: neither is listed, and the scan says
// it is unsettled, so that the caller looks again. Once the child shows
// PID 1 as its parent the scan lists it and is settled. A zombie that
// started during the run, re-parented to PID 1 or a member (90 here), may
// have forked after the listing was read: unsettled too.
func TestUntoldUnsettled(t *testing.T) {
	const uid, since = 1000, 50
	member := func(p proc.Entry) bool { return p.PID == 90 }
	cleared := func(int) string { return "its environment is empty" }
	tellable := func(int) string { return "" }
	live := map[int]bool{101: true}
	uidOf := func(pid int) (int, error) {
		if !live[pid] {
			return 0, syscall.ESRCH
		}
		return uid, nil
	}
	cases := []struct {
		name      string
		procs     []proc.Entry
		envWhy    func(int) string
		uidOf     func(int) (int, error) // nil: only 101 lives
		listed    []int
		unsettled bool
	}{
		{"middle gone before its user was read", []proc.Entry{
			{PID: 100, PPID: 1, Start: 60}, {PID: 101, PPID: 100, Start: 61},
		}, cleared, nil, nil, true},
		{"middle a zombie", []proc.Entry{
			{PID: 100, PPID: 1, Start: 60, Zombie: true}, {PID: 101, PPID: 100, Start: 61},
		}, cleared, nil, nil, true},
		{"middle not in the scan", []proc.Entry{
			{PID: 101, PPID: 100, Start: 61},
		}, cleared, nil, nil, true},
		{"middle gone after its user was read, its environment then unreadable as gone", []proc.Entry{
			{PID: 100, PPID: 1, Start: 60}, {PID: 101, PPID: 100, Start: 61},
		}, tellable, readOnce(100, uid), nil, true},
		{"middle a zombie re-parented to PID 1, the child not yet listed", []proc.Entry{
			{PID: 100, PPID: 1, Start: 60, Zombie: true},
		}, cleared, nil, nil, true},
		{"a member a zombie, its child not yet listed", []proc.Entry{
			{PID: 90, PPID: 1, Start: 55, Zombie: true},
		}, cleared, nil, nil, true},
		{"a zombie from before the run", []proc.Entry{
			{PID: 80, PPID: 1, Start: 40, Zombie: true},
		}, cleared, nil, nil, false},
		{"a zombie of a live parent that is not looked for", []proc.Entry{
			{PID: 70, PPID: 1, Start: 10}, {PID: 101, PPID: 70, Start: 61, Zombie: true},
		}, cleared, nil, nil, false},
		{"the child re-parented", []proc.Entry{
			{PID: 101, PPID: 1, Start: 61},
		}, cleared, nil, []int{101}, false},
		{"a child of a live parent that is not looked for", []proc.Entry{
			{PID: 90, PPID: 1, Start: 10}, {PID: 101, PPID: 90, Start: 61},
		}, cleared, nil, nil, false},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			uidOf := uidOf
			if c.uidOf != nil {
				uidOf = c.uidOf
			}
			out, unsettled := Untold(c.procs, since, uid, member, uidOf, c.envWhy)
			var listed []int
			for _, u := range out {
				listed = append(listed, u.PID)
			}
			if len(listed) != len(c.listed) || len(listed) > 0 && listed[0] != c.listed[0] || unsettled != c.unsettled {
				t.Errorf("listed %v, unsettled %v; want %v, %v", listed, unsettled, c.listed, c.unsettled)
			}
		})
	}
}

// readOnce is a uidOf under which pid is gone after its user is read once.
func readOnce(pid, uid int) func(int) (int, error) {
	read := 0
	return func(p int) (int, error) {
		if p == pid {
			if read++; read > 1 {
				return 0, errors.New("gone")
			}
		}
		return uid, nil
	}
}
