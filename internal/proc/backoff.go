package proc

import "time"

// Backoff spaces the checks while waiting for processes to end: quick at
// first, since most end at once on SIGTERM, then at most every 50ms.
type Backoff struct{ d time.Duration }

func NewBackoff() *Backoff { return &Backoff{d: 500 * time.Microsecond} }

func (b *Backoff) Next() time.Duration {
	d := b.d
	b.d = min(2*b.d, 50*time.Millisecond)
	return d
}
