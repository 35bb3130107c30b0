package proc

import (
	"encoding/binary"
	"errors"
	"reflect"
	"strings"
	"testing"
)

// The fixtures below are struct layouts of XNU's <sys/proc_info.h> and
// <sys/proc_info_private.h> (xnu-11417.101.15) written out field by
// field, every field given a value of its own, so that a decoder that
// reads the wrong offset reads a value that is not the one expected.

// uniqIdentifierInfo is a struct proc_uniqidentifierinfo as XNU copies it
// out.
func uniqIdentifierInfo(uid, puid uint64, version, origVersion int32) []byte {
	b := make([]byte, 0, macUniqIdentifierInfoSize)
	le := binary.LittleEndian
	for i := range 16 {
		b = append(b, byte(0xa0+i)) // p_uuid
	}
	b = le.AppendUint64(b, uid)                   // p_uniqueid
	b = le.AppendUint64(b, puid)                  // p_puniqueid
	b = le.AppendUint32(b, uint32(version))       // p_idversion
	b = le.AppendUint32(b, uint32(origVersion))   // p_orig_ppidversion
	b = le.AppendUint64(b, 0x5555_5555_5555_5555) // p_reserve2
	b = le.AppendUint64(b, 0x6666_6666_6666_6666) // p_reserve3
	return b
}

func TestParseMacIDs(t *testing.T) {
	b := uniqIdentifierInfo(0x0102_0304_0506_0708, 0x1112_1314_1516_1718, 70001, -2)
	if len(b) != 56 {
		t.Fatalf("sizeof(struct proc_uniqidentifierinfo) is 56 (XNU asserts it), the fixture has %d", len(b))
	}
	got, err := ParseMacIDs(b)
	want := MacIDs{UniqueID: 0x0102_0304_0506_0708, ParentUniqueID: 0x1112_1314_1516_1718, IDVersion: 70001, OrigParentIDVersion: -2}
	if err != nil || got != want {
		t.Errorf("ParseMacIDs = %+v, %v; want %+v", got, err, want)
	}
	// Before 15.4 the field is p_reserve2, always 0.
	got, err = ParseMacIDs(uniqIdentifierInfo(9, 1, 3, 0))
	if err != nil || got.OrigParentIDVersion != 0 || got.ParentUniqueID != 1 {
		t.Errorf("ParseMacIDs (macOS 15.3) = %+v, %v", got, err)
	}
	if _, err := ParseMacIDs(b[:55]); err == nil {
		t.Error("ParseMacIDs took 55 bytes")
	}
}

// fdInfos is an array of struct proc_fdinfo.
func fdInfos(fds ...MacFD) []byte {
	var b []byte
	for _, fd := range fds {
		b = binary.LittleEndian.AppendUint32(b, uint32(int32(fd.FD)))
		b = binary.LittleEndian.AppendUint32(b, fd.Type)
	}
	return b
}

func TestParseMacFDs(t *testing.T) {
	want := []MacFD{{0, 1}, {1, MacFDTypePipe}, {2, 2}, {255, MacFDTypePipe}, {1 << 20, 5}}
	got, err := ParseMacFDs(fdInfos(want...))
	if err != nil || !reflect.DeepEqual(got, want) {
		t.Errorf("ParseMacFDs = %v, %v; want %v", got, err, want)
	}
	if got, err := ParseMacFDs(nil); err != nil || len(got) != 0 {
		t.Errorf("ParseMacFDs(nothing) = %v, %v", got, err)
	}
	if _, err := ParseMacFDs(make([]byte, 12)); err == nil {
		t.Error("ParseMacFDs took 12 bytes, one and a half entries")
	}
}

// pipeFDInfo is a struct pipe_fdinfo: struct proc_fileinfo, then struct
// pipe_info (struct vinfo_stat, pipe_handle, pipe_peerhandle,
// pipe_status, rfu_1).
func pipeFDInfo(handle, peer uint64) []byte {
	le := binary.LittleEndian
	var b []byte
	// struct proc_fileinfo
	b = le.AppendUint32(b, 0x0001) // fi_openflags (FREAD)
	b = le.AppendUint32(b, 0)      // fi_status: not PROC_FP_CLEXEC
	b = le.AppendUint64(b, 0x0b0b) // fi_offset
	b = le.AppendUint32(b, 6)      // fi_type: DTYPE_PIPE
	b = le.AppendUint32(b, 0)      // fi_guardflags
	// struct vinfo_stat, as fill_pipeinfo fills it
	b = le.AppendUint32(b, 0)        // vst_dev
	b = le.AppendUint16(b, 0o010660) // vst_mode: S_IFIFO | 0660
	b = le.AppendUint16(b, 1)        // vst_nlink
	b = le.AppendUint64(b, 0)        // vst_ino
	b = le.AppendUint32(b, 501)      // vst_uid
	b = le.AppendUint32(b, 20)       // vst_gid
	for _, v := range []uint64{1_700_000_000, 1, 1_700_000_000, 2, 1_700_000_000, 3, 0, 0} {
		b = le.AppendUint64(b, v) // a, m, c and birth times
	}
	b = le.AppendUint64(b, 5)                     // vst_size: bytes in the pipe
	b = le.AppendUint64(b, 1)                     // vst_blocks
	b = le.AppendUint32(b, 16384)                 // vst_blksize
	b = le.AppendUint32(b, 0)                     // vst_flags
	b = le.AppendUint32(b, 0)                     // vst_gen
	b = le.AppendUint32(b, 0)                     // vst_rdev
	b = le.AppendUint64(b, 0x7777_7777_7777_7777) // vst_qspare
	b = le.AppendUint64(b, 0x8888_8888_8888_8888)
	// the rest of struct pipe_info
	b = le.AppendUint64(b, handle)
	b = le.AppendUint64(b, peer)
	b = le.AppendUint32(b, 0x0200) // pipe_status
	b = le.AppendUint32(b, 0)      // rfu_1
	return b
}

func TestParseMacPipe(t *testing.T) {
	b := pipeFDInfo(0xfeed_0000_0000_0001, 0xbeef_0000_0000_0002)
	if len(b) != macPipeFDInfoSize || macPipeFDInfoSize != 184 {
		t.Fatalf("sizeof(struct pipe_fdinfo) is 184, the fixture has %d, the constant says %d", len(b), macPipeFDInfoSize)
	}
	h, peer, err := ParseMacPipe(b)
	if err != nil || h != 0xfeed_0000_0000_0001 || peer != 0xbeef_0000_0000_0002 {
		t.Errorf("ParseMacPipe = %#x, %#x, %v", h, peer, err)
	}
	// The other end closed everywhere: its handle is the hash of NULL.
	if _, peer, _ := ParseMacPipe(pipeFDInfo(7, 0)); peer != 0 {
		t.Errorf("ParseMacPipe: peer %#x, want 0", peer)
	}
	if _, _, err := ParseMacPipe(b[:183]); err == nil {
		t.Error("ParseMacPipe took 183 bytes")
	}
}

// fakeFDTable answers listFDs's two calls as XNU's proc_pidfdlist does:
// without a buffer, the table's length plus 20 entries; with one, as
// many open descriptors as fit. opened is how many the process opens
// between the size call and the first read.
type fakeFDTable struct {
	fds    []MacFD
	opened int
	reads  []int // the buffer length of each read
}

func (f *fakeFDTable) size() (int, error) { return (len(f.fds) + 20) * macFDInfoSize, nil }

func (f *fakeFDTable) read(b []byte) (int, error) {
	if len(f.reads) == 0 {
		for i := range f.opened {
			f.fds = append(f.fds, MacFD{FD: 1000 + i, Type: MacFDTypePipe})
		}
	}
	f.reads = append(f.reads, len(b))
	n := min(len(f.fds), len(b)/macFDInfoSize)
	return copy(b, fdInfos(f.fds[:n]...)), nil
}

func TestListFDs(t *testing.T) {
	table := func(n int) []MacFD {
		var fds []MacFD
		for i := range n {
			fds = append(fds, MacFD{FD: i, Type: uint32(1 + i%6)})
		}
		return fds
	}
	for _, c := range []struct {
		name   string
		fds    int
		opened int
		reads  int
	}{
		{"small", 3, 0, 1}, // 16 entries at least
		{"within the room for 20 more", 100, 19, 1},
		{"filling it exactly", 100, 20, 2},        // a full buffer may have left some out
		{"opened more than the room", 100, 21, 2}, // read again, twice as large
		{"opened far more", 10, 200, 4},           // 30 entries, 60, 120: full each time; 240
		{"empty", 0, 0, 1},
	} {
		f := &fakeFDTable{fds: table(c.fds), opened: c.opened}
		got, err := listFDs(f.size, f.read)
		if err != nil || len(got) != len(f.fds) || len(got) > 0 && !reflect.DeepEqual(got, f.fds) {
			t.Errorf("%s: listFDs = %d descriptors, %v; want all %d", c.name, len(got), err, len(f.fds))
		}
		if len(f.reads) != c.reads {
			t.Errorf("%s: %d reads (%v), want %d", c.name, len(f.reads), f.reads, c.reads)
		}
	}

	// A table beyond the bound is an error, not a list with holes.
	reads := 0
	_, err := listFDs(func() (int, error) { return 0, nil },
		func(b []byte) (int, error) { reads++; return len(b), nil })
	if err == nil || !strings.Contains(err.Error(), "more than") || reads != 17 {
		t.Errorf("listFDs of a table that always fills the buffer: %v after %d reads, want an error after 17 (16 to 2^20 entries)", err, reads)
	}
	f := &fakeFDTable{fds: table(10)}

	// The kernel's errors pass through.
	gone := errors.New("ESRCH")
	if _, err := listFDs(func() (int, error) { return 0, gone }, f.read); !errors.Is(err, gone) {
		t.Errorf("listFDs: %v, want the size call's error", err)
	}
	if _, err := listFDs(f.size, func([]byte) (int, error) { return 0, gone }); !errors.Is(err, gone) {
		t.Errorf("listFDs: %v, want the read's error", err)
	}
	if _, err := listFDs(f.size, func(b []byte) (int, error) { return len(b) + 8, nil }); err == nil {
		t.Error("listFDs took a read longer than its buffer")
	}
}
