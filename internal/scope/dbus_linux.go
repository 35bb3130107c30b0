package scope

import (
	"bufio"
	"encoding/binary"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"os"
	"strconv"
	"strings"
	"time"

	"golang.org/x/sys/unix"
)

// The one D-Bus method call contain makes, written from the D-Bus
// specification: a connection to a manager's private socket, the
// EXTERNAL authentication (the kernel tells the manager contain's uid),
// and StartTransientUnit, whose reply is a job's path or an error. No
// bus daemon is involved, so there is no Hello and no name to resolve.
//
// Not godbus: it brings the net and os/user packages, and with them cgo,
// wherever a C compiler is present (go install): contain became a
// dynamically linked program, and every contain run paid the loader and
// libc's thread start-up (bench/README.md).

// dbusConn is a connection to a manager.
type dbusConn struct {
	f      *os.File
	r      *bufio.Reader
	serial uint32
}

// dialManager connects to the manager's private socket and authenticates.
func dialManager(path string, deadline time.Time) (*dbusConn, error) {
	// Non-blocking, so that os.NewFile makes it pollable and the deadline
	// holds.
	fd, err := unix.Socket(unix.AF_UNIX, unix.SOCK_STREAM|unix.SOCK_CLOEXEC|unix.SOCK_NONBLOCK, 0)
	if err != nil {
		return nil, err
	}
	if err := unix.Connect(fd, &unix.SockaddrUnix{Name: path}); err != nil {
		unix.Close(fd)
		return nil, err
	}
	f := os.NewFile(uintptr(fd), path)
	f.SetDeadline(deadline)
	c := &dbusConn{f: f, r: bufio.NewReader(f)}
	uid := hex.EncodeToString([]byte(strconv.Itoa(os.Geteuid())))
	if _, err := f.Write([]byte("\x00AUTH EXTERNAL " + uid + "\r\n")); err != nil {
		f.Close()
		return nil, err
	}
	line, err := c.r.ReadString('\n')
	if err != nil {
		f.Close()
		return nil, fmt.Errorf("authentication: %w", err)
	}
	if !strings.HasPrefix(line, "OK ") {
		f.Close()
		return nil, fmt.Errorf("authentication refused: %q", strings.TrimSpace(line))
	}
	if _, err := f.Write([]byte("BEGIN\r\n")); err != nil {
		f.Close()
		return nil, err
	}
	return c, nil
}

func (c *dbusConn) Close() error { return c.f.Close() }

// D-Bus message types and header fields.
const (
	msgMethodCall   = 1
	msgMethodReturn = 2
	msgError        = 3

	fieldPath        = 1
	fieldInterface   = 2
	fieldMember      = 3
	fieldErrorName   = 4
	fieldReplySerial = 5
	fieldDestination = 6
	fieldSignature   = 8
)

// property is a unit property, (sv): its name and a variant of one of the
// types contain sends.
type property struct {
	name string
	sig  string // "s", "b", "au", "as"
	val  any    // string, bool, []uint32, []string
}

// encoder writes D-Bus' little-endian wire format, each value aligned to
// its size from the message's start.
type encoder struct{ b []byte }

func (e *encoder) align(n int) {
	for len(e.b)%n != 0 {
		e.b = append(e.b, 0)
	}
}

func (e *encoder) byte(v byte) { e.b = append(e.b, v) }

func (e *encoder) uint32(v uint32) {
	e.align(4)
	e.b = binary.LittleEndian.AppendUint32(e.b, v)
}

func (e *encoder) string(s string) { // s and o
	e.uint32(uint32(len(s)))
	e.b = append(append(e.b, s...), 0)
}

func (e *encoder) signature(s string) { // g
	e.b = append(append(append(e.b, byte(len(s))), s...), 0)
}

// array writes an array whose elements align to elemAlign, written by
// elems.
func (e *encoder) array(elemAlign int, elems func()) {
	e.align(4)
	at := len(e.b)
	e.b = append(e.b, 0, 0, 0, 0)
	e.align(elemAlign)
	start := len(e.b)
	elems()
	binary.LittleEndian.PutUint32(e.b[at:], uint32(len(e.b)-start))
}

func (e *encoder) variant(sig string, v any) error {
	e.signature(sig)
	switch sig {
	case "s":
		e.string(v.(string))
	case "b":
		b := uint32(0)
		if v.(bool) {
			b = 1
		}
		e.uint32(b)
	case "au":
		e.array(4, func() {
			for _, u := range v.([]uint32) {
				e.uint32(u)
			}
		})
	case "as":
		e.array(4, func() {
			for _, s := range v.([]string) {
				e.string(s)
			}
		})
	default:
		return fmt.Errorf("no variant of type %q", sig)
	}
	return nil
}

// startTransientUnitCall is the message StartTransientUnit(name, mode,
// properties, no auxiliary units), with serial.
func startTransientUnitCall(serial uint32, name, mode string, props []property) ([]byte, error) {
	var body encoder
	body.string(name)
	body.string(mode)
	var err error
	body.array(8, func() {
		for _, p := range props {
			body.align(8)
			body.string(p.name)
			if e := body.variant(p.sig, p.val); e != nil {
				err = e
			}
		}
	})
	body.array(8, func() {}) // a(sa(sv)): none
	if err != nil {
		return nil, err
	}
	var m encoder
	m.b = append(m.b, 'l', msgMethodCall, 0, 1)
	m.uint32(uint32(len(body.b)))
	m.uint32(serial)
	field := func(code byte, sig, v string) {
		m.align(8)
		m.byte(code)
		m.signature(sig)
		if sig == "g" {
			m.signature(v)
		} else {
			m.string(v)
		}
	}
	m.array(8, func() {
		field(fieldPath, "o", "/org/freedesktop/systemd1")
		field(fieldInterface, "s", "org.freedesktop.systemd1.Manager")
		field(fieldMember, "s", "StartTransientUnit")
		field(fieldDestination, "s", "org.freedesktop.systemd1")
		field(fieldSignature, "g", "ssa(sv)a(sa(sv))")
	})
	m.align(8)
	return append(m.b, body.b...), nil
}

// startTransientUnit calls StartTransientUnit and returns the job's path.
func (c *dbusConn) startTransientUnit(name, mode string, props []property) (string, error) {
	c.serial++
	msg, err := startTransientUnitCall(c.serial, name, mode, props)
	if err != nil {
		return "", err
	}
	if _, err := c.f.Write(msg); err != nil {
		return "", err
	}
	for {
		r, err := readMessage(c.r)
		if err != nil {
			return "", err
		}
		if r.replySerial != c.serial {
			continue // a signal, or another call's reply
		}
		switch r.typ {
		case msgMethodReturn:
			if r.sig != "o" || len(r.strings) == 0 {
				return "", fmt.Errorf("StartTransientUnit returned %q, not a job's path", r.sig)
			}
			return r.strings[0], nil
		case msgError:
			msg := r.errorName
			if len(r.strings) > 0 {
				msg += ": " + r.strings[0]
			}
			return "", errors.New(msg)
		}
	}
}

// reply is what contain reads of a message: its type, the serial it
// replies to, an error's name, and its body when that is one string or
// object path (a job's path, an error's message).
type reply struct {
	typ         byte
	replySerial uint32
	errorName   string
	sig         string
	strings     []string
}

// readMessage reads one message.
func readMessage(r io.Reader) (*reply, error) {
	head := make([]byte, 16)
	if _, err := io.ReadFull(r, head); err != nil {
		return nil, err
	}
	if head[0] != 'l' {
		return nil, fmt.Errorf("a big-endian message (%q): not expected from a local manager", head[0])
	}
	bodyLen := binary.LittleEndian.Uint32(head[4:])
	fieldsLen := binary.LittleEndian.Uint32(head[12:])
	if bodyLen > 1<<20 || fieldsLen > 1<<16 {
		return nil, errors.New("a message too large for a reply")
	}
	padded := (16 + int(fieldsLen) + 7) &^ 7
	rest := make([]byte, padded-16+int(bodyLen))
	if _, err := io.ReadFull(r, rest); err != nil {
		return nil, err
	}
	msg := append(head, rest...)
	m := &reply{typ: head[1]}
	d := decoder{b: msg[:16+fieldsLen], at: 16}
	for d.at < len(d.b) {
		d.align(8)
		code := d.byte()
		sig := d.signature()
		switch sig {
		case "s", "o":
			v := d.string()
			if code == fieldErrorName {
				m.errorName = v
			}
		case "u":
			v := d.uint32()
			if code == fieldReplySerial {
				m.replySerial = v
			}
		case "g":
			v := d.signature()
			if code == fieldSignature {
				m.sig = v
			}
		default:
			return nil, fmt.Errorf("a header field of type %q", sig)
		}
		if d.err != nil {
			return nil, d.err
		}
	}
	body := decoder{b: msg[:padded+int(bodyLen)], at: padded}
	for _, t := range m.sig {
		if t != 's' && t != 'o' {
			break // only a body of strings is read
		}
		m.strings = append(m.strings, body.string())
	}
	if body.err != nil {
		return nil, body.err
	}
	return m, nil
}

// decoder reads the wire format back, aligned from the message's start.
type decoder struct {
	b   []byte
	at  int
	err error
}

func (d *decoder) need(n int) bool {
	if d.err == nil && d.at+n > len(d.b) {
		d.err = errors.New("a message cut short")
	}
	return d.err == nil
}

func (d *decoder) align(n int) {
	for d.at%n != 0 {
		d.at++
	}
}

func (d *decoder) byte() byte {
	if !d.need(1) {
		return 0
	}
	d.at++
	return d.b[d.at-1]
}

func (d *decoder) uint32() uint32 {
	d.align(4)
	if !d.need(4) {
		return 0
	}
	d.at += 4
	return binary.LittleEndian.Uint32(d.b[d.at-4:])
}

func (d *decoder) string() string {
	n := int(d.uint32())
	if !d.need(n + 1) {
		return ""
	}
	s := string(d.b[d.at : d.at+n])
	d.at += n + 1
	return s
}

func (d *decoder) signature() string {
	n := int(d.byte())
	if !d.need(n + 1) {
		return ""
	}
	s := string(d.b[d.at : d.at+n])
	d.at += n + 1
	return s
}
