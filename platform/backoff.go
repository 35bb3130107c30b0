package platform

import "time"

// backoff spaces the checks while waiting for processes to end: quick at
// first, since most end at once on SIGTERM, then at most every 50ms.
type backoff struct{ d time.Duration }

func newBackoff() *backoff { return &backoff{d: 500 * time.Microsecond} }

func (b *backoff) next() time.Duration {
	d := b.d
	b.d = min(2*b.d, 50*time.Millisecond)
	return d
}
