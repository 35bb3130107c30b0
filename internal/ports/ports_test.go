package ports

import (
	"reflect"
	"testing"
)

func TestWords(t *testing.T) {
	ps := []Port{
		{Proto: "tcp", Addr: "::", Port: 3000},
		{Proto: "udp", Addr: "127.0.0.1", Port: 53},
		{Proto: "tcp", Addr: "0.0.0.0", Port: 3000},
		{Proto: "tcp", Addr: "::1", Port: 8080},
		{Proto: "udp", Addr: "0.0.0.0", Port: 5353},
	}
	want := []string{"127.0.0.1:53/udp", ":3000", ":5353/udp", "[::1]:8080"}
	if got := Words(ps); !reflect.DeepEqual(got, want) {
		t.Errorf("Words = %q, want %q", got, want)
	}
	if got := Join(nil); got != "-" {
		t.Errorf("Join(nil) = %q", got)
	}
	if got := ToJSON(nil); got == nil || len(got) != 0 {
		t.Errorf("ToJSON(nil) = %#v, want []", got)
	}
	wantJSON := []JSON{{Proto: "udp", Address: "127.0.0.1", Port: 53}, {Proto: "tcp", Address: "0.0.0.0", Port: 3000},
		{Proto: "tcp", Address: "::", Port: 3000}, {Proto: "udp", Address: "0.0.0.0", Port: 5353}, {Proto: "tcp", Address: "::1", Port: 8080}}
	if got := ToJSON(ps); !reflect.DeepEqual(got, wantJSON) {
		t.Errorf("ToJSON = %v, want %v (by port, protocol, address)", got, wantJSON)
	}
}

// TestParseTable: lines as a little-endian Linux writes them (the words
// of an address in the machine's order); on a big-endian machine the
// fixture is turned round first.
func TestParseTable(t *testing.T) {
	if hostOrder.Uint16([]byte{1, 0}) != 1 {
		t.Skip("the fixture is a little-endian machine's /proc/net; this machine is big-endian")
	}
	tcp := `  sl  local_address rem_address   st tx_queue rx_queue tr tm->when retrnsmt   uid  timeout inode
   0: 00000000:0BB8 00000000:0000 0A 00000000:00000000 00:00000000 00000000     0        0 1001 1 0000000000000000 100 0 0 10 0
   1: 0100007F:1F90 00000000:0000 0A 00000000:00000000 00:00000000 00000000  1000        0 1002 1 0000000000000000 100 0 0 10 0
   2: 0100007F:1F90 0100007F:C350 01 00000000:00000000 00:00000000 00000000  1000        0 1003 1 0000000000000000 20 4 30 10 -1
   3: 0100007F:1F91 00000000:0000 0A 00000000:00000000 00:00000000 00000000  1000        0 0 1 0000000000000000 100 0 0 10 0
`
	tcp6 := `  sl  local_address                         remote_address                        st tx_queue rx_queue tr tm->when retrnsmt   uid  timeout inode
   0: 00000000000000000000000000000000:0BB8 00000000000000000000000000000000:0000 0A 00000000:00000000 00:00000000 00000000     0        0 2001 1 0000000000000000 100 0 0 10 0
   1: 00000000000000000000000001000000:1F92 00000000000000000000000000000000:0000 0A 00000000:00000000 00:00000000 00000000     0        0 2002 1 0000000000000000 100 0 0 10 0
   2: 0000000000000000FFFF00000100007F:1F93 00000000000000000000000000000000:0000 0A 00000000:00000000 00:00000000 00000000     0        0 2003 1 0000000000000000 100 0 0 10 0
`
	udp := `   sl  local_address rem_address   st tx_queue rx_queue tr tm->when retrnsmt   uid  timeout inode ref pointer drops
  100: 00000000:14E9 00000000:0000 07 00000000:00000000 00:00000000 00000000   104        0 3001 2 0000000000000000 0
  101: 0100007F:0035 0100007F:A000 01 00000000:00000000 00:00000000 00000000   104        0 3002 2 0000000000000000 0
`
	got := map[uint64]Port{}
	parseTable([]byte(tcp), "tcp", got)
	parseTable([]byte(tcp6), "tcp", got)
	parseTable([]byte(udp), "udp", got)
	want := map[uint64]Port{
		1001: {Proto: "tcp", Addr: "0.0.0.0", Port: 3000},
		1002: {Proto: "tcp", Addr: "127.0.0.1", Port: 8080},
		2001: {Proto: "tcp", Addr: "::", Port: 3000},
		2002: {Proto: "tcp", Addr: "::1", Port: 8082},
		2003: {Proto: "tcp", Addr: "127.0.0.1", Port: 8083},
		3001: {Proto: "udp", Addr: "0.0.0.0", Port: 5353},
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("parseTable:\n got %v\nwant %v", got, want)
	}
}
