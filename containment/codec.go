package containment

import (
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"syscall"
	"time"

	"github.com/contain-cli/contain/internal/run"
	"github.com/contain-cli/contain/report"
)

// The Spec and the Outcome cross the pipes as fields, each a tag byte, a
// length (uvarint) and its value: bytes as they are (an argument or a
// variable need not be UTF-8, and arrives as it was given), numbers as
// varints, a list as its items, each with its length. Written by hand:
// a copy starts on every Start, and encoding/json's first use in a
// process costs a quarter of a millisecond; and JSON would replace bytes
// that are not UTF-8. Only the report, when asked for, is JSON (the
// report's own schema). An unknown tag is refused: a copy of another
// build reads nothing it cannot.

// The Spec's fields.
const (
	tagArgs byte = iota + 1
	tagEnv
	tagTool
	tagTimeout
	tagSignal
	tagKillAfter
	tagGrace
	tagPreserve
	tagDetach
	tagVerbose
	tagReport
	tagKeep
	tagMemory
	tagPids
	tagCPUTime
	tagCPUs
	tagStrict
	tagAllowDaemons
	tagOnTimeout
	tagNoTerminal
	tagHold
	tagSendEvents
)

// The Outcome's fields.
const (
	tagStatus byte = iota + 1
	tagEndSignal
	tagPid
	tagExited
	tagCode
	tagKilledBy
	tagTimedOut
	tagLimit
	tagError
	tagTheReport
)

// fields appends fields to a buffer.
type fields []byte

func (f *fields) bytes(tag byte, v []byte) {
	*f = append(*f, tag)
	*f = binary.AppendUvarint(*f, uint64(len(v)))
	*f = append(*f, v...)
}

func (f *fields) str(tag byte, v string) {
	if v != "" {
		f.bytes(tag, []byte(v))
	}
}

func (f *fields) list(tag byte, v []string) {
	var b []byte
	for _, s := range v {
		b = binary.AppendUvarint(b, uint64(len(s)))
		b = append(b, s...)
	}
	f.bytes(tag, b)
}

func (f *fields) int(tag byte, v int64) {
	if v != 0 {
		f.bytes(tag, binary.AppendVarint(nil, v))
	}
}

func (f *fields) flag(tag byte, v bool) {
	if v {
		f.bytes(tag, nil)
	}
}

// readFields calls field for each field of b, in order.
func readFields(b []byte, field func(tag byte, v []byte) error) error {
	for len(b) > 0 {
		tag := b[0]
		n, k := binary.Uvarint(b[1:])
		if k <= 0 || n > uint64(len(b)-1-k) {
			return errors.New("a field cut short")
		}
		v := b[1+k : 1+k+int(n)]
		b = b[1+k+int(n):]
		if err := field(tag, v); err != nil {
			return err
		}
	}
	return nil
}

func varint(v []byte) (int64, error) {
	n, k := binary.Varint(v)
	if k != len(v) {
		return 0, errors.New("a bad number")
	}
	return n, nil
}

func list(v []byte) ([]string, error) {
	out := []string{}
	for len(v) > 0 {
		n, k := binary.Uvarint(v)
		if k <= 0 || n > uint64(len(v)-k) {
			return nil, errors.New("a list cut short")
		}
		out = append(out, string(v[k:k+int(n)]))
		v = v[k+int(n):]
	}
	return out, nil
}

// marshalSpec is s as fields.
func marshalSpec(s run.Spec) []byte {
	var f fields
	f.list(tagArgs, s.Args)
	if s.Env != nil {
		f.list(tagEnv, s.Env)
	}
	f.str(tagTool, s.Tool)
	f.int(tagTimeout, int64(s.Timeout))
	f.int(tagSignal, int64(s.Signal))
	f.int(tagKillAfter, int64(s.KillAfter))
	f.int(tagGrace, int64(s.Grace))
	f.flag(tagPreserve, s.PreserveStatus)
	f.flag(tagDetach, s.Detach)
	f.flag(tagVerbose, s.Verbose)
	f.str(tagReport, s.Report)
	f.flag(tagKeep, s.Keep)
	f.int(tagMemory, int64(s.Limits.Memory))
	f.int(tagPids, int64(s.Limits.Pids))
	f.int(tagCPUTime, int64(s.Limits.CPUTime))
	f.int(tagCPUs, int64(math.Float64bits(s.Limits.CPUs)))
	f.flag(tagStrict, s.Limits.Strict)
	f.flag(tagAllowDaemons, s.AllowDaemons)
	f.str(tagOnTimeout, s.OnTimeout)
	f.flag(tagNoTerminal, s.NoTerminal)
	f.flag(tagHold, s.Hold)
	f.flag(tagSendEvents, s.SendEvents)
	return f
}

// unmarshalSpec reads what marshalSpec wrote.
func unmarshalSpec(b []byte) (run.Spec, error) {
	var s run.Spec
	err := readFields(b, func(tag byte, v []byte) (err error) {
		var n int64
		switch tag {
		case tagArgs:
			s.Args, err = list(v)
		case tagEnv:
			s.Env, err = list(v)
		case tagTool:
			s.Tool = string(v)
		case tagReport:
			s.Report = string(v)
		case tagOnTimeout:
			s.OnTimeout = string(v)
		case tagPreserve:
			s.PreserveStatus = true
		case tagDetach:
			s.Detach = true
		case tagVerbose:
			s.Verbose = true
		case tagKeep:
			s.Keep = true
		case tagStrict:
			s.Limits.Strict = true
		case tagAllowDaemons:
			s.AllowDaemons = true
		case tagNoTerminal:
			s.NoTerminal = true
		case tagHold:
			s.Hold = true
		case tagSendEvents:
			s.SendEvents = true
		case tagTimeout, tagSignal, tagKillAfter, tagGrace, tagMemory, tagPids, tagCPUTime, tagCPUs:
			if n, err = varint(v); err != nil {
				return err
			}
			switch tag {
			case tagTimeout:
				s.Timeout = time.Duration(n)
			case tagSignal:
				s.Signal = syscall.Signal(n)
			case tagKillAfter:
				s.KillAfter = time.Duration(n)
			case tagGrace:
				s.Grace = time.Duration(n)
			case tagMemory:
				s.Limits.Memory = uint64(n)
			case tagPids:
				s.Limits.Pids = int(n)
			case tagCPUTime:
				s.Limits.CPUTime = time.Duration(n)
			case tagCPUs:
				s.Limits.CPUs = math.Float64frombits(uint64(n))
			}
		default:
			return fmt.Errorf("an unknown field %d", tag)
		}
		return err
	})
	return s, err
}

// marshalOutcome is o as fields; its report, when there is one, as JSON.
func marshalOutcome(o run.Outcome) []byte {
	var f fields
	f.int(tagStatus, int64(o.Status))
	f.int(tagEndSignal, int64(o.Signal))
	f.int(tagPid, int64(o.Pid))
	f.flag(tagExited, o.Exited)
	f.int(tagCode, int64(o.Code))
	f.int(tagKilledBy, int64(o.KilledBy))
	f.flag(tagTimedOut, o.TimedOut)
	f.str(tagLimit, o.Limit)
	f.str(tagError, o.Error)
	if o.Report != nil {
		if b, err := json.Marshal(o.Report); err == nil {
			f.bytes(tagTheReport, b)
		}
	}
	return f
}

// unmarshalOutcome reads what marshalOutcome wrote.
func unmarshalOutcome(b []byte) (run.Outcome, error) {
	var o run.Outcome
	err := readFields(b, func(tag byte, v []byte) (err error) {
		switch tag {
		case tagExited:
			o.Exited = true
		case tagTimedOut:
			o.TimedOut = true
		case tagLimit:
			o.Limit = string(v)
		case tagError:
			o.Error = string(v)
		case tagTheReport:
			o.Report = new(report.Report)
			err = json.Unmarshal(v, o.Report)
		case tagStatus, tagEndSignal, tagPid, tagCode, tagKilledBy:
			n, err := varint(v)
			if err != nil {
				return err
			}
			switch tag {
			case tagStatus:
				o.Status = int(n)
			case tagEndSignal:
				o.Signal = syscall.Signal(n)
			case tagPid:
				o.Pid = int(n)
			case tagCode:
				o.Code = int(n)
			case tagKilledBy:
				o.KilledBy = syscall.Signal(n)
			}
		default:
			return fmt.Errorf("an unknown field %d", tag)
		}
		return err
	})
	return o, err
}
