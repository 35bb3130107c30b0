// Package systemd is the D-Bus side of package scope: the helper program
// (contain __scope PID DESCRIPTION) that asks systemd for a transient scope
// and to move PID into it. It is a program of its own, run by contain only
// where it needs a scope, so that contain run does not link D-Bus (and
// the net package it brings, which would make Go initialise urfave/cli's
// packages before contain run starts: bench/README.md).
package systemd

import (
	"context"
	"fmt"
	"os"
	"strconv"
	"time"

	"github.com/godbus/dbus/v5"

	"github.com/contain-cli/contain/internal/cgroup"
	"github.com/contain-cli/contain/internal/scope"
)

type property struct {
	Name  string
	Value dbus.Variant
}

type auxUnit struct {
	Name  string
	Props []property
}

// Main is the helper: args are contain's PID, the unit contain was started
// in ("": none of this manager's) and the scope's description. It returns
// once systemd has accepted the scope's job; the caller waits for the
// kernel to show contain in the scope. A failure is one line on stderr.
func Main(args []string) int {
	if len(args) != 3 {
		fmt.Fprintln(os.Stderr, "contain: the scope helper is run by contain run, not by hand")
		return 2
	}
	pid, err := strconv.Atoi(args[0])
	if err != nil || pid <= 0 {
		fmt.Fprintln(os.Stderr, "contain: the scope helper is run by contain run, not by hand")
		return 2
	}
	if err := ask(pid, args[1], args[2]); err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	return 0
}

// ask asks the manager of this user for contain-PID.scope, delegated, part
// of the unit from, with pid in it.
func ask(pid int, from, description string) error {
	sock, manager := scope.ManagerSocket()
	conn, err := dbus.Dial("unix:path=" + sock)
	if err != nil {
		return fmt.Errorf("cannot reach the systemd manager (%s): %w", manager, err)
	}
	defer conn.Close()
	if err := conn.Auth([]dbus.Auth{dbus.AuthExternal(strconv.Itoa(os.Geteuid()))}); err != nil {
		return fmt.Errorf("the systemd manager (%s) refused contain: %w", manager, err)
	}
	unit := cgroup.Prefix + strconv.Itoa(pid) + cgroup.ScopeSuffix
	props := []property{
		{"Description", dbus.MakeVariant(description)},
		{"PIDs", dbus.MakeVariant([]uint32{uint32(pid)})},
		{"Delegate", dbus.MakeVariant(true)},
		{"CollectMode", dbus.MakeVariant("inactive-or-failed")},
	}
	if from != "" {
		// Stopping the unit contain was started in (a CI runner's
		// service) stops the scope too, as it would have stopped contain
		// where it was. (No After=: the scope would wait for a unit that
		// is still starting, as a oneshot service is while it runs.)
		props = append(props, property{"PartOf", dbus.MakeVariant([]string{from})})
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	mgr := conn.Object("org.freedesktop.systemd1", "/org/freedesktop/systemd1")
	var job dbus.ObjectPath
	err = mgr.CallWithContext(ctx, "org.freedesktop.systemd1.Manager.StartTransientUnit", 0, unit, "fail", props, []auxUnit{}).Store(&job)
	if err != nil {
		return fmt.Errorf("systemd (%s) would not make %s: %w", manager, unit, err)
	}
	return nil
}
