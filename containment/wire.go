package containment

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"sync"

	"github.com/contain-cli/contain/internal/proc"
	"github.com/contain-cli/contain/internal/run"
)

// The host and its copy speak over the copy's two pipes, in frames: a
// kind, a 4-byte big-endian length, the payload.
//
// On the stop pipe the host writes one frame, the Spec: everything the
// copy is to do (run.Spec, field by field: codec.go; its version first,
// so that a copy of another build, the program replaced on disk since it
// started, refuses what it cannot read). It is the copy's only source of settings: no
// flags, no environment (the copy runs with a few of the host's own
// variables; COMMAND gets cmd.Env, inside the Spec). The host closing the
// pipe is Group.Close.
//
// After the Spec, the program tells a Group's holder of each command it
// started in the session (frameMember: PID and start time), so that the
// holder keeps it whatever its environment shows later.
//
// On the out pipe the copy writes: COMMAND's PID once it runs (frameStarted),
// or, for a Group's holder, that it holds the session and the cgroup its
// commands start in (frameHeld),
// contain's own lines (frameLog), the run's events when the program asked
// for them (frameEvent: one line of package events, each frame), and,
// last, how the run ended
// (frameOutcome, a run.Outcome, field by field). A copy that ends
// without an Outcome was killed.
const (
	frameSpec    = 'C'
	frameStarted = 'S'
	frameHeld    = 'H'
	frameMember  = 'M'
	frameLog     = 'L'
	frameEvent   = 'E'
	frameOutcome = 'O'
)

// specVersion is the Spec's version.
const specVersion = "contain-spec-4"

// maxFrame bounds what either side reads: more than any argument list
// and environment the system would pass.
const maxFrame = 64 << 20

// frame is one frame, ready to write.
func frame(kind byte, payload []byte) []byte {
	b := make([]byte, 0, 5+len(payload))
	b = append(b, kind)
	b = binary.BigEndian.AppendUint32(b, uint32(len(payload)))
	return append(b, payload...)
}

// readFrame reads one frame from r.
func readFrame(r io.Reader) (kind byte, payload []byte, err error) {
	var h [5]byte
	if _, err := io.ReadFull(r, h[:]); err != nil {
		return 0, nil, err
	}
	n := binary.BigEndian.Uint32(h[1:])
	if n > maxFrame {
		return 0, nil, errors.New("a frame too long")
	}
	payload = make([]byte, n)
	if _, err := io.ReadFull(r, payload); err != nil {
		return 0, nil, io.ErrUnexpectedEOF
	}
	return h[0], payload, nil
}

// encodeSpec frames s as the copy reads it: the version, then its
// fields (codec.go).
func encodeSpec(s run.Spec) []byte {
	return frame(frameSpec, append([]byte(specVersion+"\x00"), marshalSpec(s)...))
}

// decodeSpec reads the Spec from r, the stop pipe.
func decodeSpec(r io.Reader) (run.Spec, error) {
	kind, b, err := readFrame(r)
	if err != nil {
		return run.Spec{}, fmt.Errorf("no spec on the pipe (%v)", err)
	}
	version, rest, ok := bytes.Cut(b, []byte{0})
	if kind != frameSpec || !ok || string(version) != specVersion {
		return run.Spec{}, errors.New("the spec on the pipe is not this program's")
	}
	s, err := unmarshalSpec(rest)
	if err != nil {
		return run.Spec{}, fmt.Errorf("the spec on the pipe is not this program's (%v)", err)
	}
	if len(s.Args) == 0 && !s.Hold {
		return run.Spec{}, errors.New("the spec on the pipe names no command")
	}
	return s, nil
}

// frameWriter writes whole frames to the host, from any goroutine.
type frameWriter struct {
	mu sync.Mutex
	w  io.Writer
}

func (f *frameWriter) send(kind byte, payload []byte) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	_, err := f.w.Write(frame(kind, payload))
	return err
}

// lines is an io.Writer that sends each line written as a log frame.
func (f *frameWriter) lines() io.Writer { return frameLines{f, frameLog} }

// eventLines is an io.Writer that sends each line written (package
// events writes one a Write) as an event frame.
func (f *frameWriter) eventLines() io.Writer { return frameLines{f, frameEvent} }

// frameLines sends each line written to it as a frame of its kind.
type frameLines struct {
	f    *frameWriter
	kind byte
}

func (l frameLines) Write(b []byte) (int, error) {
	for _, line := range splitLines(b) {
		if err := l.f.send(l.kind, line); err != nil {
			return 0, err
		}
	}
	return len(b), nil
}

// splitLines splits b into its lines, without their newlines.
func splitLines(b []byte) [][]byte {
	var out [][]byte
	for len(b) > 0 {
		i := 0
		for i < len(b) && b[i] != '\n' {
			i++
		}
		out = append(out, b[:i])
		if i < len(b) {
			i++
		}
		b = b[i:]
	}
	return out
}

// memberFrame tells the holder of process id, started in its session.
func memberFrame(id proc.ID) []byte {
	return frame(frameMember, fmt.Appendf(nil, "%d %d", id.PID, id.Start))
}

// parseMember reads a frameMember's payload.
func parseMember(b []byte) (proc.ID, bool) {
	var id proc.ID
	n, err := fmt.Sscanf(string(b), "%d %d", &id.PID, &id.Start)
	return id, err == nil && n == 2 && id.PID > 1 && id.Start > 0
}
