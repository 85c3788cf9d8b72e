package engine

// PeekDeadLetters returns the records DrainDeadLetters(p) would take now,
// in the same order, without taking them (records that expire before the
// drain's time may be among them). The gRPC layer sizes a drain's Max with
// it, so that the records taken fit one response: a drain's records are
// removed when the command applies, and an answer too large to send would
// lose them.
func (e *Engine) PeekDeadLetters(p DrainParams) []DeadLetterRecord {
	n := min(max(p.Max, 1), e.lim.MaxReserveBatch)
	var r *deadRecord
	byQueue := p.Queue != ""
	if byQueue {
		q := e.queues[p.Queue]
		if q == nil {
			return nil
		}
		r = q.deadHead
	} else {
		r = e.deadHead
	}
	var out []DeadLetterRecord
	for r != nil && len(out) < n {
		out = append(out, e.recordView(r))
		if byQueue {
			r = r.qnext
		} else {
			r = r.next
		}
	}
	return out
}
