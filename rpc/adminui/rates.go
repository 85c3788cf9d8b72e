package adminui

import (
	"fmt"
	"time"
)

// rateMinSpan: shorter spans are too noisy to show as a rate.
const rateMinSpan = 2 * time.Second

// rates are per second over Span; Known is false until two samples at least
// rateMinSpan apart exist.
type rates struct {
	Known                 bool
	Enqueued, Acked, Dead float64
	Span                  time.Duration
}

func (r rates) Format(v float64) string {
	switch {
	case !r.Known:
		return "—"
	case v == 0:
		return "0/s"
	case v < 10:
		return fmt.Sprintf("%.2f/s", v)
	}
	return fmt.Sprintf("%.0f/s", v)
}
