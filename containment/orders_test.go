package containment

import (
	"bytes"
	"slices"
	"testing"
)

// TestOrders: the copy reads back what the host framed, and refuses
// anything else: another version, a truncated frame, orders that are not
// contain run's.
func TestOrders(t *testing.T) {
	args := []string{"run", "--originator", "T", "--report", "/tmp/a b", "--", "sh", "-c", "echo 'x\ny'", ""}
	got, err := decodeOrders(bytes.NewReader(encodeOrders(args)))
	if err != nil || !slices.Equal(got, args) {
		t.Fatalf("decoded %q, %v; want %q", got, err, args)
	}
	good := encodeOrders(args)
	for name, b := range map[string][]byte{
		"empty":     nil,
		"truncated": good[:len(good)-3],
		"version":   append(append([]byte{0, 0, 0, 18}, "contain-orders-0\x00"...), "run\x00"...),
		"not run":   encodeOrders([]string{"ps", "--", "x"}),
		"too long":  {0xff, 0xff, 0xff, 0xff},
		"unended":   append([]byte{0, 0, 0, 24}, "contain-orders-1\x00run\x00--"...),
	} {
		if got, err := decodeOrders(bytes.NewReader(b)); err == nil {
			t.Errorf("%s: decoded %q", name, got)
		}
	}
}
