package containment

import (
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"strings"
)

// A copy's orders are what it is told to do, on its stop pipe, before
// anything else: contain run's arguments ("run", its options from the
// Group's Options, "--", the command). They are the copy's settings,
// all of them: it takes none from its argv, which only shows them to ps,
// nor from its environment, which is its command's (cmd.Env), where a
// job's CONTAIN_REPORT or CONTAIN_DISABLE reaches the command and no
// further.
//
// They are framed as a 4-byte big-endian length, then the version and
// each argument, each ended by a NUL (no argument of a command can hold
// one): nothing to initialise in a copy that starts on every Start.

// ordersVersion is the orders' version: a copy of another build (the
// program replaced on disk since it started) refuses what it cannot read.
const ordersVersion = "contain-orders-1"

// maxOrders bounds the orders a copy reads: more than any argument list
// the system would pass.
const maxOrders = 64 << 20

// encodeOrders frames args as the copy reads them. An argument that holds
// a NUL could not be passed to a command anyway: it is cut there, as
// exec would refuse it.
func encodeOrders(args []string) []byte {
	n := len(ordersVersion) + 1
	for _, a := range args {
		n += len(a) + 1
	}
	b := binary.BigEndian.AppendUint32(make([]byte, 0, 4+n), uint32(n))
	b = append(append(b, ordersVersion...), 0)
	for _, a := range args {
		if i := strings.IndexByte(a, 0); i >= 0 {
			a = a[:i]
		}
		b = append(append(b, a...), 0)
	}
	return b
}

// decodeOrders reads the orders from r, the stop pipe.
func decodeOrders(r io.Reader) ([]string, error) {
	var n [4]byte
	if _, err := io.ReadFull(r, n[:]); err != nil {
		return nil, fmt.Errorf("no orders on the pipe (%v)", err)
	}
	size := binary.BigEndian.Uint32(n[:])
	if size > maxOrders {
		return nil, errors.New("no orders on the pipe (too long)")
	}
	b := make([]byte, size)
	if _, err := io.ReadFull(r, b); err != nil {
		return nil, fmt.Errorf("no orders on the pipe (%v)", err)
	}
	f := strings.Split(string(b), "\x00")
	if len(f) < 4 || f[0] != ordersVersion || f[len(f)-1] != "" || f[1] != "run" {
		return nil, errors.New("the orders on the pipe are not this program's")
	}
	return f[1 : len(f)-1], nil
}
