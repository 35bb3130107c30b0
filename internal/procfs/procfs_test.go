package procfs

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"
)

var fixture = FS{Root: "testdata/proc"}

func TestParseStat(t *testing.T) {
	tail := " 4242 4243 4244 0 -1 4194560 100 0 0 0 1 2 3 4 20 0 1 0 987654 1000 100 18446744073709551615"
	cases := []struct {
		line  string
		comm  string
		state byte
	}{
		{"4244 (sleep) S" + tail, "sleep", 'S'},
		{"4244 (my prog) R" + tail, "my prog", 'R'},
		{"4244 (a) (b) ) Z" + tail, "a) (b) ", 'Z'},
		{"4244 ((x)) S" + tail, "(x)", 'S'},
		{"4244 () S" + tail, "", 'S'},
		{"4244 (x\ny) S" + tail, "x\ny", 'S'},
	}
	for _, c := range cases {
		st, err := ParseStat([]byte(c.line))
		if err != nil {
			t.Errorf("ParseStat(%q): %v", c.line, err)
			continue
		}
		want := Stat{PID: 4244, Comm: c.comm, State: c.state, PPID: 4242, PGRP: 4243, Session: 4244, Start: 987654,
			UTime: 1, STime: 2, CUTime: 3, CSTime: 4, RSS: 100}
		if st != want {
			t.Errorf("ParseStat(%q) = %+v, want %+v", c.line, st, want)
		}
	}
	for _, bad := range []string{"", "4244", "(sleep) S" + tail, "x (sleep) S" + tail, "4244 (sleep", "4244 sleep) S 1",
		"4244 (sleep) S 1 2 3", "4244 (x) SS" + tail, "4244 (x) S x" + tail, "-1 (x) S" + tail,
		"4244 (x) S 1 2 3 0 -1 4194560 100 0 0 0 1 2 0 0 20 0 1 0 -5"} {
		st, err := ParseStat([]byte(bad))
		if err == nil {
			t.Errorf("ParseStat(%q) = %+v, want an error", bad, st)
		} else if !errors.Is(err, ErrFormat) {
			t.Errorf("ParseStat(%q): %v does not wrap ErrFormat", bad, err)
		}
	}
}

func TestGetenv(t *testing.T) {
	env := []byte("A=1\x00RUNNING_PROCESS_ORIGINATOR=X:1\x00RUNNING_PROCESS_ORIGINATOR=Y:2\x00B=\x00")
	for _, c := range []struct {
		key, value string
		ok         bool
	}{
		{"A", "1", true}, {"RUNNING_PROCESS_ORIGINATOR", "X:1", true}, {"B", "", true},
		{"RUNNING", "", false}, {"C", "", false}, {"", "", false},
	} {
		v, ok := Getenv(env, c.key)
		if v != c.value || ok != c.ok {
			t.Errorf("Getenv(%q) = %q, %v; want %q, %v", c.key, v, ok, c.value, c.ok)
		}
	}
	for _, env := range []string{"", "\x00\x00", "=\x00", "RUNNING_PROCESS_ORIGINATOR"} {
		if v, ok := Getenv([]byte(env), "RUNNING_PROCESS_ORIGINATOR"); ok {
			t.Errorf("Getenv in %q = %q, want nothing", env, v)
		}
	}
}

func TestSplitNUL(t *testing.T) {
	for in, want := range map[string][]string{
		"":                 nil,
		"sleep\x00300\x00": {"sleep", "300"},
		"nginx: worker":    {"nginx: worker"},
		"a\x00\x00b\x00":   {"a", "", "b"},
	} {
		if got := SplitNUL([]byte(in)); !reflect.DeepEqual(got, want) {
			t.Errorf("SplitNUL(%q) = %q, want %q", in, got, want)
		}
	}
}

func TestBootTime(t *testing.T) {
	bt, err := fixture.BootTime()
	if err != nil || !bt.Equal(time.Unix(1763700000, 0)) {
		t.Fatalf("BootTime() = %v, %v", bt, err)
	}
	if got := StartTime(bt, 5001); !got.Equal(time.Unix(1763700050, 10e6)) {
		t.Errorf("StartTime(5001 ticks) = %v", got)
	}
	if _, err := (FS{Root: "testdata/none"}).BootTime(); err == nil {
		t.Error("BootTime of a missing tree: no error")
	}
}

func TestStatFixture(t *testing.T) {
	st, err := fixture.Stat(101, nil)
	if err != nil || st.Comm != "my (odd) ) (prog" || st.PPID != 100 || st.Start != 5001 {
		t.Errorf("Stat(101) = %+v, %v", st, err)
	}
	st, err = fixture.Stat(102, nil)
	if err != nil || !st.Zombie() {
		t.Errorf("Stat(102) = %+v, %v; want a zombie", st, err)
	}
	if _, err := fixture.Stat(105, nil); !errors.Is(err, ErrFormat) {
		t.Errorf("Stat(105), truncated: %v, want ErrFormat", err)
	}
	if _, err := fixture.Stat(106, nil); err == nil {
		t.Error("Stat(106), vanished: no error")
	}
	uid, err := fixture.UID(108, nil)
	if err != nil || uid != 65534 {
		t.Errorf("UID(108) = %d, %v", uid, err)
	}
	if _, err := fixture.UID(112, nil); !errors.Is(err, ErrFormat) {
		t.Errorf("UID(112), no Uid line: %v, want ErrFormat", err)
	}
}

func TestScanFixture(t *testing.T) {
	sc, err := fixture.ScanTagged("RUNNING_PROCESS_ORIGINATOR", "RUNNING_PROCESS_IS_DAEMON")
	if err != nil {
		t.Fatal(err)
	}
	got := map[int]Tagged{}
	for _, p := range sc.Procs {
		got[p.PID] = p
	}
	want := map[int]Tagged{
		100: {Stat: Stat{PID: 100, Comm: "sleep", State: 'S', PPID: 1, PGRP: 100, Session: 100, Start: 5000, UTime: 1, STime: 2, RSS: 100}, UID: 1000, Argv: []string{"sleep", "300"}, Value: "CLUD:4242"},
		101: {Stat: Stat{PID: 101, Comm: "my (odd) ) (prog", State: 'S', PPID: 100, PGRP: 101, Session: 101, Start: 5001, UTime: 1, STime: 2, RSS: 100}, Argv: []string{"/usr/bin/my prog", "--flag"}, Value: "CLUD:4242"},
		107: {Stat: Stat{PID: 107, Comm: "cut", State: 'S', PPID: 1, PGRP: 107, Session: 107, Start: 5007, UTime: 1, STime: 2, RSS: 100}, Argv: []string{"cut"}, Value: "CONTAIN:77"},
		108: {Stat: Stat{PID: 108, Comm: "agent", State: 'S', PPID: 1, PGRP: 108, Session: 108, Start: 5008, UTime: 1, STime: 2, RSS: 100}, UID: 65534, Argv: []string{"ssh-agent"}, Value: "CONTAIN:77", Daemon: true},
		109: {Stat: Stat{PID: 109, Comm: "bad", State: 'S', PPID: 1, PGRP: 109, Session: 109, Start: 5009, UTime: 1, STime: 2, RSS: 100}, Argv: []string{"bad"}, Value: "X:abc"},
		110: {Stat: Stat{PID: 110, Comm: "dup", State: 'S', PPID: 1, PGRP: 110, Session: 110, Start: 5010, UTime: 1, STime: 2, RSS: 100}, Argv: []string{"dup"}, Value: "A:1"},
		111: {Stat: Stat{PID: 111, Comm: "nginx", State: 'S', PPID: 1, PGRP: 111, Session: 111, Start: 5011, UTime: 1, STime: 2, RSS: 100}, Argv: []string{"nginx: worker process"}, Value: "CLUD:4242"},
		114: {Stat: Stat{PID: 114, Comm: "empty", State: 'S', PPID: 1, PGRP: 114, Session: 114, Start: 5014, UTime: 1, STime: 2, RSS: 100}, Argv: []string{"empty"}, Value: ""},
		115: {Stat: Stat{PID: 115, Comm: "kworker", State: 'S', PPID: 2, PGRP: 115, Session: 115, Start: 5015, UTime: 1, STime: 2, RSS: 100}, Value: "K:9"},
	}
	if !reflect.DeepEqual(got, want) {
		for pid := range merge(got, want) {
			if !reflect.DeepEqual(got[pid], want[pid]) {
				t.Errorf("PID %d:\n got %+v\nwant %+v", pid, got[pid], want[pid])
			}
		}
	}
	// 105 (truncated stat) and 112 (no Uid line) carry the tag but cannot be
	// described: counted, not guessed at. 104's environment is NULs only,
	// as redis-server leaves it once it wrote its title: counted as written
	// over. 106 (vanished), 102 and 77 (zombies), 103 (no environment) and
	// 113 (no tag, a name without '=') are simply not there. PID 1, whose
	// environment cannot be read (a directory here; a VM's or sandbox's
	// init, even for root), is never signalled: not counted.
	if want := map[string]int{"unexpected content": 2, ReasonOverwritten: 1}; !reflect.DeepEqual(sc.Unreadable, want) {
		t.Errorf("Unreadable = %v, want %v", sc.Unreadable, want)
	}
}

func merge(a, b map[int]Tagged) map[int]bool {
	m := map[int]bool{}
	for k := range a {
		m[k] = true
	}
	for k := range b {
		m[k] = true
	}
	return m
}

func TestScanMissingRoot(t *testing.T) {
	if _, err := (FS{Root: "testdata/none"}).ScanTagged("A", "B"); err == nil {
		t.Fatal("ScanTagged of a missing tree: no error")
	}
}

// FuzzParseStat: no input makes the parser panic, and what it accepts has
// its comm between the first '(' and the last ')'.
func FuzzParseStat(f *testing.F) {
	f.Add([]byte("4244 (a) (b) ) Z 1 2 3 0 -1 4194560 100 0 0 0 1 2 0 0 20 0 1 0 987654 1000"))
	f.Add([]byte("1 () S 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0"))
	f.Add([]byte("7 ((((( R 1 2 3"))
	f.Fuzz(func(t *testing.T, b []byte) {
		st, err := ParseStat(b)
		if err != nil {
			return
		}
		if st.PID < 0 || len(st.Comm) > len(b) {
			t.Fatalf("ParseStat(%q) = %+v", b, st)
		}
	})
}

// TestOverwritten decides on bytes as /proc/PID/environ gave them for
// real programs that set their title, and for environments as execve
// leaves them.
func TestOverwritten(t *testing.T) {
	zeros := func(n int) string { return string(make([]byte, n)) }
	spaces := func(n int) string { return strings.Repeat(" ", n) }
	over := map[string]string{
		"redis-server --daemonize yes (all NULs)":   zeros(1547),
		"nginx master (the title's end, then NULs)": " /tmp/bx -e /dev/null" + zeros(1520),
		"nginx worker (all NULs)":                   zeros(1541),
		"perl $0 (spaces, then a NUL)":              spaces(1534) + "\x00",
		"postgres-like title over the start":        "postgres: checkpointer \x00\x00\x00PATH=/bin\x00",
		"no final NUL":                              "PATH=/bin\x00HOME=/ro",
		"a title with = in it":                      "nginx: x=1\x00",
		"empty entry in the middle":                 "A=1\x00\x00B=2\x00",
		"one NUL":                                   "\x00",
		"empty name":                                "=x\x00",
		"control character in the name":             "A\tB=1\x00",
		"DEL in the name":                           "A\x7f=1\x00",
	}
	for what, env := range over {
		if !Overwritten([]byte(env)) {
			t.Errorf("%s: not taken as written over", what)
		}
	}
	kept := map[string]string{
		"empty (env -i, a kernel thread, a zombie)": "",
		"one variable":            "A=1\x00",
		"the tag and others":      "PATH=/bin\x00RUNNING_PROCESS_ORIGINATOR=CLUD:42\x00HOME=/x\x00",
		"an empty value":          "A=\x00",
		"spaces and = in a value": "PS1=a b = c \x00",
		"a name with no =":        "FOO\x00A=1\x00",
		"a bash function":         "BASH_FUNC_f%%=() {  echo x\n}\x00",
		"UTF-8 in the name":       "É=1\x00",
	}
	for what, env := range kept {
		if Overwritten([]byte(env)) {
			t.Errorf("%s: taken as written over", what)
		}
	}
}

func TestTrimArgv(t *testing.T) {
	redis := append([]string{"redis-server unixsocket:/tmp/r.sock"}, make([]string, 106)...)
	for _, c := range []struct{ in, want []string }{
		{nil, nil},
		{[]string{""}, nil},
		{[]string{"", ""}, nil},
		{[]string{"sleep", "300"}, []string{"sleep", "300"}},
		{redis, []string{"redis-server unixsocket:/tmp/r.sock"}},
		{[]string{"a", "", "b", "", ""}, []string{"a", "", "b"}},
		{[]string{"", "x"}, []string{"", "x"}},
	} {
		got := TrimArgv(c.in)
		if !reflect.DeepEqual(got, c.want) {
			t.Errorf("TrimArgv(%q) = %q, want %q", c.in, got, c.want)
		}
	}
}

// TestCmdlineTrimmed: a command line padded with NULs after a title reads
// as the title alone.
func TestCmdlineTrimmed(t *testing.T) {
	root := t.TempDir()
	if err := os.MkdirAll(filepath.Join(root, "7"), 0o755); err != nil {
		t.Fatal(err)
	}
	b := append([]byte("redis-server *:0\x00"), make([]byte, 106)...)
	if err := os.WriteFile(filepath.Join(root, "7", "cmdline"), b, 0o644); err != nil {
		t.Fatal(err)
	}
	argv, err := FS{Root: root}.Cmdline(7, nil)
	if err != nil || !reflect.DeepEqual(argv, []string{"redis-server *:0"}) {
		t.Errorf("Cmdline = %q, %v", argv, err)
	}
}

// TestParseNSpid: the NSpid line, one PID per namespace from /proc's own
// down; a line missing or malformed is nil.
func TestParseSigIgn(t *testing.T) {
	status := []byte("Name:\tcontain\nSigBlk:\t0000000000000000\nSigIgn:\t0000000000001002\nSigCgt:\tfffffffd7fc3fefd\n")
	mask, err := ParseStatusSigIgn(status)
	if err != nil || mask != 0x1002 {
		t.Fatalf("mask %x, %v", mask, err)
	}
	if _, err := ParseStatusSigIgn([]byte("Name:\tx\n")); !errors.Is(err, ErrFormat) {
		t.Errorf("a status with no SigIgn line: %v, want ErrFormat", err)
	}
	if _, err := ParseStatusSigIgn([]byte("SigIgn:\tzz\n")); !errors.Is(err, ErrFormat) {
		t.Errorf("a malformed SigIgn line: %v, want ErrFormat", err)
	}
	// A contain run started in the background by a shell without job
	// control: SIGINT and SIGQUIT ignored.
	if mask, err := fixture.SigIgn(77, nil); err != nil || mask != 0x6 {
		t.Errorf("SigIgn(77) = %x, %v; want 6", mask, err)
	}
	if _, err := fixture.SigIgn(100, nil); !errors.Is(err, ErrFormat) {
		t.Errorf("SigIgn(100), no SigIgn line: %v, want ErrFormat", err)
	}
}

func TestParseNSpid(t *testing.T) {
	for in, want := range map[string][]int{
		"Name:\tsleep\nNSpid:\t5303\t303\nUid:\t0\t0\t0\t0\n": {5303, 303},
		"NSpid:\t42\n":       {42},
		"NSpid:\t42\t1\t1\n": {42, 1, 1},
		"Name:\tsleep\n":     nil,
		"NSpid:\t42\tx\n":    nil,
		"NSpid:\n":           nil,
		"NSpid:\t0\n":        nil,
	} {
		if got := ParseStatusNSpid([]byte(in)); fmt.Sprint(got) != fmt.Sprint(want) {
			t.Errorf("ParseStatusNSpid(%q) = %v, want %v", in, got, want)
		}
	}
	for in, want := range map[string]uint64{"pid:[4026531836]": 4026531836, "pid:[]": 0, "pid:4026531836": 0, "pid:[0]": 0, "x": 0} {
		got, err := ParseNSLink(in)
		if got != want || (err == nil) != (want != 0) {
			t.Errorf("ParseNSLink(%q) = %d, %v; want %d", in, got, err, want)
		}
	}
}

func TestUnescapeMount(t *testing.T) {
	for in, want := range map[string]string{`/sys/fs/cgroup`: "/sys/fs/cgroup", `/mnt/a\040b`: "/mnt/a b", `/x\134y`: `/x\y`, `/bad\9`: `/bad\9`} {
		if got := UnescapeMount(in); got != want {
			t.Errorf("UnescapeMount(%q) = %q, want %q", in, got, want)
		}
	}
}
