package shim

import (
	"encoding/binary"
	"io"
	"os"
)

// KeeperArg is the shim's argument when the built-in keeper
// (builtin.Keeper) hands over to it: contain __shim keeper.
const KeeperArg = "keeper"

// The keeper's descriptors, from its first (Base): above every one contain
// inherited, which COMMAND inherits in turn (see internal/builtin's
// keeper_amd64.S). Its records go to Base+StatusFd, as the shim's do.
const (
	BriefFd   = 0 // the brief: a memfd contain wrote (Brief)
	EndFd     = 2 // a pipe whose write end only contain holds: a byte to start, then its end
	JournalFd = 3 // the records of COMMAND's start and end again, for contain __shim keeper
	ExeFd     = 4 // contain's binary, for the hand-over
	KeeperFd  = 5 // the keeper itself, which closes it
)

// BriefBase is where the keeper maps the brief: the pointers in it point
// there.
const BriefBase = 0x10000000

// The brief's header: pointers (8 bytes) to COMMAND's path, argv and envp
// and to /bin/sh's path and argv (0: none); COMMAND's Pdeathsig, flags
// (briefForeground), the child's errno and a word for its process group
// (4 bytes each); the signal mask the keeper started with (8); the
// orders' offset and length (8 each) and contain's PID (4).
const (
	briefPdeathsig  = 40
	briefFlags      = 44
	briefOrders     = 64
	briefOrdersLen  = 72
	briefContainPID = 80
	briefHeader     = 96

	briefForeground = 1
)

// Brief is what the keeper is told: the start of COMMAND (path, argv, env;
// /bin/sh for a script without #!, unless COMMAND is /bin/sh), its
// Pdeathsig, whether it takes the terminal, and the orders that contain
// __shim keeper reads should it take over.
func Brief(o Orders, orders []byte, containPID int) []byte {
	const shell = "/bin/sh"
	b := make([]byte, briefHeader)
	ne := binary.NativeEndian
	var strs [][]byte
	// Each array is its pointers, then a 0; the strings come after all
	// the arrays, each with its NUL.
	type array struct {
		at    int // where its pointer goes in the header
		items []string
	}
	shellArgv := append([]string{shell, o.Path}, o.Argv[1:]...)
	arrays := []array{{8, o.Argv}, {16, o.Env}}
	if o.Argv[0] != shell {
		arrays = append(arrays, array{32, shellArgv})
	}
	size := briefHeader
	for _, a := range arrays {
		size += 8 * (len(a.items) + 1)
	}
	str := func(s string) uint64 {
		at := size
		for _, p := range strs {
			at += len(p)
		}
		strs = append(strs, append([]byte(s), 0))
		return BriefBase + uint64(at)
	}
	ne.PutUint64(b[0:], str(o.Path))
	if o.Argv[0] != shell {
		ne.PutUint64(b[24:], str(shell))
	}
	for _, a := range arrays {
		ne.PutUint64(b[a.at:], BriefBase+uint64(len(b)))
		for _, s := range a.items {
			b = ne.AppendUint64(b, str(s))
		}
		b = ne.AppendUint64(b, 0)
	}
	for _, s := range strs {
		b = append(b, s...)
	}
	ne.PutUint32(b[briefPdeathsig:], uint32(o.Pdeathsig))
	if o.Foreground {
		ne.PutUint32(b[briefFlags:], briefForeground)
	}
	ne.PutUint64(b[briefOrders:], uint64(len(b)))
	ne.PutUint64(b[briefOrdersLen:], uint64(len(orders)))
	ne.PutUint32(b[briefContainPID:], uint32(containPID))
	return append(b, orders...)
}

// readBrief reads the orders and contain's PID back from the brief.
func readBrief(f *os.File) (orders []byte, containPID int, err error) {
	var h [briefHeader]byte
	if _, err := f.ReadAt(h[:], 0); err != nil {
		return nil, 0, err
	}
	ne := binary.NativeEndian
	orders = make([]byte, ne.Uint64(h[briefOrdersLen:]))
	if _, err := f.ReadAt(orders, int64(ne.Uint64(h[briefOrders:]))); err != nil && err != io.EOF {
		return nil, 0, err
	}
	return orders, int(ne.Uint32(h[briefContainPID:])), nil
}
