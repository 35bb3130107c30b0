package ports

import (
	"encoding/binary"
	"net/netip"
	"reflect"
	"testing"
)

// winRows lays out a table as iprtrmib.h does: a count, then the rows.
func winRows(t winTable, rows ...Holder) []byte {
	b := make([]byte, 4+len(rows)*t.row+7) // and slack, as the API leaves
	binary.LittleEndian.PutUint32(b, uint32(len(rows)))
	for i, h := range rows {
		r := b[4+i*t.row:]
		a := netip.MustParseAddr(h.Port.Addr)
		if t.addrLen == 4 {
			b := a.As4()
			copy(r[t.addr:], b[:])
		} else {
			b := a.As16()
			copy(r[t.addr:], b[:])
		}
		binary.BigEndian.PutUint16(r[t.port:], h.Port.Port)
		binary.LittleEndian.PutUint32(r[t.pid:], uint32(h.PID))
	}
	return b
}

func TestParseWinTable(t *testing.T) {
	for _, c := range []struct {
		table winTable
		rows  []Holder
	}{
		{winTCP4, []Holder{{PID: 4, Port: Port{"tcp", "0.0.0.0", 445}}, {PID: 1234, Port: Port{"tcp", "127.0.0.1", 3000}}}},
		{winTCP6, []Holder{{PID: 1234, Port: Port{"tcp", "::1", 3000}}}},
		{winUDP4, []Holder{{PID: 99, Port: Port{"udp", "0.0.0.0", 5353}}}},
		{winUDP6, []Holder{{PID: 99, Port: Port{"udp", "fe80::1", 5353}}, {PID: 100, Port: Port{"udp", "::", 53}}}},
	} {
		got, err := parseWinTable(winRows(c.table, c.rows...), c.table)
		if err != nil || !reflect.DeepEqual(got, c.rows) {
			t.Errorf("%+v: parseWinTable = %+v, %v; want %+v", c.table, got, err, c.rows)
		}
	}
	if _, err := parseWinTable([]byte{9, 0, 0, 0, 1, 2}, winTCP4); err == nil {
		t.Error("a count of rows beyond the buffer is refused")
	}
}
