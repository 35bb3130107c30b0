// Command libhost is a program that embeds package containment, for the
// tests, in a module of its own: libhost TOOL -- COMMAND... starts a child
// of its own outside the library, COMMAND in a group (the tests give one
// that leaves background jobs and a setsid escapee), and $LIBHOST_DAEMON
// (words) detached; prints what it started as one JSON line; and on
// "close" on its stdin closes the group and says, in another line, what
// became of COMMAND and of its own child. libhost reap SESSION reaps the
// session with containment.Reap. libhost see SESSION TOOL says what
// Wait, Stop, Sessions and Reap make of them (seeMain).
package main

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"time"

	"github.com/contain-cli/contain/containment"
	"github.com/contain-cli/contain/session"
)

type started struct {
	Copy   int    `json:"copy"`   // the copy that holds the group's session
	Tag    string `json:"tag"`    // the group's session
	Daemon int    `json:"daemon"` // the detached daemon
	Own    int    `json:"own"`    // the host's own child, outside the library
	// Command is the command's PID (Group.Pid).
	Command int `json:"command"`
	// Listed: how many processes containment.Sessions lists in the
	// group's session, and its state (waiting up to 10 s for 3).
	Listed int    `json:"listed"`
	State  string `json:"state"`
}

type closed struct {
	Reports  int    `json:"reports"`
	Ended    int    `json:"ended"`     // processes the report says contain ended
	Wait     string `json:"wait"`      // the group's cmd.Wait
	OwnAlive bool   `json:"own_alive"` // after Close
	OwnWait  string `json:"own_wait"`  // the host's own cmd.Wait after killing it
}

func main() {
	containment.Main()
	if len(os.Args) == 2 && os.Args[1] == "sleep" {
		sleepMain()
	}
	if len(os.Args) == 3 && os.Args[1] == "reap" {
		// libhost reap SESSION: containment.Reap of that session, as JSON.
		res, err := containment.Reap(containment.ReapOptions{Sessions: []string{os.Args[2]}, Grace: time.Second})
		if err != nil {
			fail(err)
		}
		json.NewEncoder(os.Stdout).Encode(res)
		return
	}
	if len(os.Args) == 4 && os.Args[1] == "see" {
		seeMain(os.Args[2], os.Args[3])
		return
	}
	if len(os.Args) < 4 || os.Args[2] != "--" {
		fmt.Fprintln(os.Stderr, "usage: libhost TOOL -- COMMAND...")
		os.Exit(2)
	}
	tool, argv := os.Args[1], os.Args[3:]
	// The host's own child, which the library must neither wait for nor
	// signal: own.Wait returns only when the host kills it.
	own := exec.Command(os.Args[0], "sleep")
	if err := own.Start(); err != nil {
		fail(err)
	}
	ownDone := make(chan string, 1)
	go func() { ownDone <- fmt.Sprint(own.Wait()) }()
	g, err := containment.NewGroup(containment.Options{Originator: tool, Grace: time.Second, Reports: true, Log: os.Stderr})
	if err != nil {
		fail(err)
	}
	cmd := exec.Command(argv[0], argv[1:]...)
	cmd.Stdout, cmd.Stderr = os.Stderr, os.Stderr
	if err := g.Start(cmd); err != nil {
		fail(err)
	}
	var daemon int
	if words := strings.Fields(os.Getenv("LIBHOST_DAEMON")); len(words) > 0 {
		if daemon, err = g.StartDetached(exec.Command(words[0], words[1:]...)); err != nil {
			fail(err)
		}
	}
	// The session: the Group's holder's (Linux, macOS), or on Windows the
	// command's copy's, which is cmd.Process there.
	tag := g.Tag()
	if tag == "" {
		tag = fmt.Sprintf("%s:%d", tool, cmd.Process.Pid)
	}
	_, holder, _ := strings.Cut(tag, ":")
	copyPID, _ := strconv.Atoi(holder)
	s := started{Copy: copyPID, Tag: tag, Daemon: daemon, Own: own.Process.Pid, Command: g.Pid(cmd)}
	want := 3
	if v, err := strconv.Atoi(os.Getenv("LIBHOST_LISTED")); err == nil {
		want = v
	}
	for deadline := time.Now().Add(10 * time.Second); s.Listed < want && time.Now().Before(deadline); time.Sleep(20 * time.Millisecond) {
		l, err := containment.Sessions(session.Filter{Values: []string{s.Tag}})
		if err != nil {
			fail(err)
		}
		for _, se := range l.Sessions {
			s.Listed, s.State = len(se.Processes), string(se.State)
		}
	}
	json.NewEncoder(os.Stdout).Encode(s)

	sc := bufio.NewScanner(os.Stdin)
	for sc.Scan() && sc.Text() != "close" {
	}
	waited := make(chan string, 1)
	go func() { waited <- fmt.Sprint(cmd.Wait()) }()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	reports, err := g.Close(ctx)
	if err != nil {
		fail(err)
	}
	c := closed{Reports: len(reports), Wait: <-waited}
	for _, r := range reports {
		c.Ended += len(r.EndedByContain)
	}
	select {
	case c.OwnWait = <-ownDone:
	default:
		c.OwnAlive = true
		own.Process.Kill()
		c.OwnWait = <-ownDone
	}
	json.NewEncoder(os.Stdout).Encode(c)
}

// sleepMain is the host's own child: it waits to be killed.
func sleepMain() {
	time.Sleep(time.Hour)
	os.Exit(0)
}

func fail(err error) {
	fmt.Fprintln(os.Stderr, "libhost:", err)
	os.Exit(1)
}

// seen is what libhost see SESSION TOOL prints: what the library's Wait,
// Stop, Sessions and Reap say of a session and a tool.
type seen struct {
	Wait       string   `json:"wait"`        // Wait's error, "" for none
	CannotSee  bool     `json:"cannot_see"`  // it is containment.ErrCannotSee
	Stop       []string `json:"stop"`        // each session's outcome: detail
	Listed     int      `json:"listed"`      // sessions of TOOL Sessions lists
	States     []string `json:"states"`      // and their states
	Hidden     string   `json:"hidden"`      // Sessions' Hidden
	Reaped     []string `json:"reaped"`      // Reap's processes: result
	ReapHidden string   `json:"reap_hidden"` // Reap's Hidden
}

// seeMain is libhost see SESSION TOOL (the hardened /proc tests): each
// function given two seconds at the most, none of it waiting for the
// session to end.
func seeMain(value, tool string) {
	var out seen
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	if _, err := containment.Wait(ctx, []string{value}, nil, false); err != nil {
		out.Wait, out.CannotSee = err.Error(), errors.Is(err, containment.ErrCannotSee)
	}
	cancel()
	ctx, cancel = context.WithTimeout(context.Background(), 2*time.Second)
	stopped, _, err := containment.Stop(ctx, containment.StopOptions{Sessions: []string{value}})
	cancel()
	if err != nil {
		fail(err)
	}
	for _, s := range stopped {
		out.Stop = append(out.Stop, s.Outcome+": "+s.Detail)
	}
	l, err := containment.Sessions(session.Filter{Tools: []string{tool}})
	if err != nil {
		fail(err)
	}
	out.Listed, out.Hidden = len(l.Sessions), l.Hidden
	for _, s := range l.Sessions {
		out.States = append(out.States, string(s.State))
	}
	res, err := containment.Reap(containment.ReapOptions{Tools: []string{tool}, Grace: time.Second})
	if err != nil {
		fail(err)
	}
	out.ReapHidden = res.Hidden
	for _, p := range res.Processes {
		out.Reaped = append(out.Reaped, p.Result)
	}
	json.NewEncoder(os.Stdout).Encode(out)
}
