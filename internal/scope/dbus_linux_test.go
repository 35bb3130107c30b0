package scope

import (
	"bufio"
	"bytes"
	"encoding/binary"
	"encoding/hex"
	"net"
	"os"
	"path/filepath"
	"reflect"
	"strconv"
	"strings"
	"testing"
	"time"
)

// fakeManager serves one connection on a unix socket as systemd's private
// socket does: EXTERNAL authentication, then one method call, which it
// decodes and answers with reply (a job's path, or an error).
func fakeManager(t *testing.T, reply func(serial uint32) []byte) (path string, got chan call) {
	t.Helper()
	path = filepath.Join(t.TempDir(), "private")
	ln, err := net.Listen("unix", path)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ln.Close() })
	got = make(chan call, 1)
	go func() {
		c, err := ln.Accept()
		if err != nil {
			return
		}
		defer c.Close()
		r := bufio.NewReader(c)
		auth, _ := r.ReadString('\n')
		want := "\x00AUTH EXTERNAL " + hex.EncodeToString([]byte(strconv.Itoa(os.Geteuid()))) + "\r\n"
		if auth != want {
			c.Write([]byte("REJECTED EXTERNAL\r\n"))
			got <- call{err: "auth " + strconv.Quote(auth)}
			return
		}
		c.Write([]byte("OK 0123456789abcdef0123456789abcdef\r\n"))
		if begin, _ := r.ReadString('\n'); begin != "BEGIN\r\n" {
			got <- call{err: "begin " + strconv.Quote(begin)}
			return
		}
		cl := decodeCall(r)
		got <- cl
		c.Write(reply(cl.serial))
	}()
	return path, got
}

// call is a method call as the fake manager decoded it.
type call struct {
	serial              uint32
	path, iface, member string
	dest, sig           string
	name, mode          string
	props               map[string]any
	aux                 uint32
	err                 string
}

func decodeCall(r *bufio.Reader) call {
	head := make([]byte, 16)
	if _, err := r.Read(head); err != nil {
		return call{err: err.Error()}
	}
	bodyLen, fieldsLen := binary.LittleEndian.Uint32(head[4:]), binary.LittleEndian.Uint32(head[12:])
	padded := (16 + int(fieldsLen) + 7) &^ 7
	rest := make([]byte, padded-16+int(bodyLen))
	if _, err := readFull(r, rest); err != nil {
		return call{err: err.Error()}
	}
	msg := append(head, rest...)
	c := call{serial: binary.LittleEndian.Uint32(head[8:]), props: map[string]any{}}
	if head[0] != 'l' || head[1] != msgMethodCall || head[3] != 1 {
		c.err = "header " + hex.EncodeToString(head[:4])
		return c
	}
	d := decoder{b: msg[:16+fieldsLen], at: 16}
	for d.at < len(d.b) && d.err == nil {
		d.align(8)
		code := d.byte()
		sig := d.signature()
		var v string
		if sig == "g" {
			v = d.signature()
		} else {
			v = d.string()
		}
		switch code {
		case fieldPath:
			c.path = v
		case fieldInterface:
			c.iface = v
		case fieldMember:
			c.member = v
		case fieldDestination:
			c.dest = v
		case fieldSignature:
			c.sig = v
		}
	}
	b := decoder{b: msg, at: padded}
	c.name, c.mode = b.string(), b.string()
	n := int(b.uint32())
	b.align(8)
	for end := b.at + n; b.at < end && b.err == nil; {
		b.align(8)
		name := b.string()
		switch sig := b.signature(); sig {
		case "s":
			c.props[name] = b.string()
		case "b":
			c.props[name] = b.uint32() == 1
		case "au", "as":
			m := int(b.uint32())
			var us []uint32
			var ss []string
			for end := b.at + m; b.at < end && b.err == nil; {
				if sig == "au" {
					us = append(us, b.uint32())
				} else {
					ss = append(ss, b.string())
				}
			}
			if sig == "au" {
				c.props[name] = us
			} else {
				c.props[name] = ss
			}
		default:
			c.err = "property type " + sig
			return c
		}
	}
	c.aux = b.uint32()
	if b.err != nil || d.err != nil {
		c.err = "decode"
	}
	return c
}

func readFull(r *bufio.Reader, b []byte) (int, error) {
	n := 0
	for n < len(b) {
		m, err := r.Read(b[n:])
		n += m
		if err != nil {
			return n, err
		}
	}
	return n, nil
}

// replyMessage is a reply of type typ to serial: a job's path ("o") or an
// error's message ("s"), with errName for an error.
func replyMessage(typ byte, serial uint32, errName, sig, body string) []byte {
	var b encoder
	b.string(body)
	var m encoder
	m.b = append(m.b, 'l', typ, 1, 1)
	m.uint32(uint32(len(b.b)))
	m.uint32(7)
	m.array(8, func() {
		m.align(8)
		m.byte(fieldReplySerial)
		m.signature("u")
		m.uint32(serial)
		if errName != "" {
			m.align(8)
			m.byte(fieldErrorName)
			m.signature("s")
			m.string(errName)
		}
		m.align(8)
		m.byte(fieldSignature)
		m.signature("g")
		m.signature(sig)
	})
	m.align(8)
	return append(m.b, b.b...)
}

// TestStartTransientUnit: the call contain makes is what systemd reads
// (the header, the signature, each property and its type, no auxiliary
// unit), and a job's path or an error comes back as such.
func TestStartTransientUnit(t *testing.T) {
	props := []property{
		{"Description", "s", "contain run: make -j8"},
		{"PIDs", "au", []uint32{4242}},
		{"Delegate", "b", true},
		{"CollectMode", "s", "inactive-or-failed"},
		{"PartOf", "as", []string{"runner.service"}},
	}
	path, got := fakeManager(t, func(serial uint32) []byte {
		// A signal first, which is no reply: skipped.
		return append(replyMessage(4, 0, "", "s", "noise"), replyMessage(msgMethodReturn, serial, "", "o", "/org/freedesktop/systemd1/job/17")...)
	})
	c, err := dialManager(path, time.Now().Add(5*time.Second))
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	job, err := c.startTransientUnit("contain-4242.scope", "fail", props)
	if err != nil || job != "/org/freedesktop/systemd1/job/17" {
		t.Errorf("job %q, %v", job, err)
	}
	cl := <-got
	want := call{serial: cl.serial, path: "/org/freedesktop/systemd1", iface: "org.freedesktop.systemd1.Manager", member: "StartTransientUnit",
		dest: "org.freedesktop.systemd1", sig: "ssa(sv)a(sa(sv))", name: "contain-4242.scope", mode: "fail",
		props: map[string]any{"Description": "contain run: make -j8", "PIDs": []uint32{4242}, "Delegate": true,
			"CollectMode": "inactive-or-failed", "PartOf": []string{"runner.service"}}}
	if !reflect.DeepEqual(cl, want) {
		t.Errorf("the call as systemd reads it:\n%+v\nwant\n%+v", cl, want)
	}

	path, _ = fakeManager(t, func(serial uint32) []byte {
		return replyMessage(msgError, serial, "org.freedesktop.systemd1.UnitExists", "s", "Unit contain-4242.scope already exists.")
	})
	c2, err := dialManager(path, time.Now().Add(5*time.Second))
	if err != nil {
		t.Fatal(err)
	}
	defer c2.Close()
	if _, err := c2.startTransientUnit("contain-4242.scope", "fail", props); err == nil ||
		err.Error() != "org.freedesktop.systemd1.UnitExists: Unit contain-4242.scope already exists." {
		t.Errorf("error %v", err)
	}
}

// TestDialManagerRefused: a socket that refuses the authentication is an
// error, said as such.
func TestDialManagerRefused(t *testing.T) {
	path := filepath.Join(t.TempDir(), "private")
	ln, err := net.Listen("unix", path)
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	go func() {
		c, err := ln.Accept()
		if err == nil {
			bufio.NewReader(c).ReadString('\n')
			c.Write([]byte("REJECTED EXTERNAL\r\n"))
			c.Close()
		}
	}()
	if _, err := dialManager(path, time.Now().Add(5*time.Second)); err == nil || !strings.Contains(err.Error(), "REJECTED") {
		t.Errorf("dialManager: %v", err)
	}
}

// FuzzReadMessage: whatever a socket sends back, reading it is an error or
// a reply, never a panic.
func FuzzReadMessage(f *testing.F) {
	f.Add(replyMessage(msgMethodReturn, 1, "", "o", "/job/1"))
	f.Add(replyMessage(msgError, 1, "a.b", "s", "no"))
	f.Add([]byte("l\x02\x01\x01\xff\xff\xff\xff\x01\x00\x00\x00\xff\x00\x00\x00"))
	f.Fuzz(func(t *testing.T, b []byte) {
		readMessage(bytes.NewReader(b))
	})
}

// TestDialManagerSilent: a socket that accepts and says nothing holds
// contain no longer than the deadline.
func TestDialManagerSilent(t *testing.T) {
	path := filepath.Join(t.TempDir(), "private")
	ln, err := net.Listen("unix", path)
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	held := make(chan net.Conn, 1)
	go func() {
		if c, err := ln.Accept(); err == nil {
			held <- c // open, silent
		}
	}()
	start := time.Now()
	c, err := dialManager(path, start.Add(200*time.Millisecond))
	if err == nil {
		c.Close()
		t.Fatal("dialManager returned a connection from a silent socket")
	}
	if took := time.Since(start); took > 2*time.Second {
		t.Errorf("dialManager waited %v for a silent socket, past its deadline", took)
	}
	select {
	case c := <-held:
		c.Close()
	default:
	}
}
