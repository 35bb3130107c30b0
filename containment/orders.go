package containment

import (
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"io"
)

// copyOrders are what a copy is told to do, on its stop pipe, before
// anything else: contain run's arguments ("run", its options from the
// Group's Options, "--", the command). They are the copy's settings,
// all of them: it takes none from its argv, which only shows them to ps,
// nor from its environment, which is its command's (cmd.Env), where a
// job's CONTAIN_REPORT or CONTAIN_DISABLE reaches the command and no
// further.
type copyOrders struct {
	Version int      `json:"version"`
	Args    []string `json:"args"`
}

// ordersVersion is copyOrders' version: a copy of another build (the
// program replaced on disk since it started) refuses what it cannot read.
const ordersVersion = 1

// maxOrders bounds the orders a copy reads: more than any argument list
// the system would pass.
const maxOrders = 64 << 20

// encodeOrders frames args as the copy reads them: a 4-byte big-endian
// length, then copyOrders as JSON.
func encodeOrders(args []string) []byte {
	b, _ := json.Marshal(copyOrders{Version: ordersVersion, Args: args})
	return append(binary.BigEndian.AppendUint32(nil, uint32(len(b))), b...)
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
	var o copyOrders
	if err := json.Unmarshal(b, &o); err != nil || o.Version != ordersVersion || len(o.Args) < 2 || o.Args[0] != "run" {
		return nil, errors.New("the orders on the pipe are not this program's")
	}
	return o.Args, nil
}
