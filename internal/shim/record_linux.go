package shim

import (
	"encoding/binary"
	"io"
)

// Record is one of the shim's reports to contain: 16 bytes, Kind then
// three values, in the machine's byte order (both ends are this machine).
// The built-in keeper (builtin.Keeper) writes the same records.
type Record struct {
	Kind    int32
	A, B, C int32
}

// The kinds of Record.
const (
	Started = 1 // A: COMMAND's PID
	Failed  = 2 // A: the errno: COMMAND could not be started
	Stopped = 3 // A: COMMAND's wait status: it stopped
	Exited  = 4 // A: COMMAND's wait status; B: 1 when other processes live
	Reaped  = 5 // A: the PID of another process of the session, B: how it ended
)

// RecordSize is a record's size: pipe writes of it are atomic.
const RecordSize = 16

// Write writes rec to w.
func (rec Record) Write(w io.Writer) error {
	var b [RecordSize]byte
	binary.NativeEndian.PutUint32(b[0:], uint32(rec.Kind))
	binary.NativeEndian.PutUint32(b[4:], uint32(rec.A))
	binary.NativeEndian.PutUint32(b[8:], uint32(rec.B))
	binary.NativeEndian.PutUint32(b[12:], uint32(rec.C))
	_, err := w.Write(b[:])
	return err
}

// ReadRecord reads one record from r.
func ReadRecord(r io.Reader) (Record, error) {
	var b [RecordSize]byte
	if _, err := io.ReadFull(r, b[:]); err != nil {
		return Record{}, err
	}
	return Record{
		Kind: int32(binary.NativeEndian.Uint32(b[0:])),
		A:    int32(binary.NativeEndian.Uint32(b[4:])),
		B:    int32(binary.NativeEndian.Uint32(b[8:])),
		C:    int32(binary.NativeEndian.Uint32(b[12:])),
	}, nil
}
