package fsm

import "sync"

// answering counts the reserve request ids this node's callers wait on: a
// JobReserve whose id is not among them is answered by another node (or by
// nobody), so its apply here leaves the deliveries' payloads unread
// (engine.ReserveParams.WithoutPayloads). With payloads on disk that read is
// most of a reserve's apply, and every replica paid it for an answer only
// the proposer sends. What the reserve changes is the same either way.
type answering struct {
	mu  sync.Mutex
	ids map[string]int
}

// AnswerReserve registers a reserve request id this node is about to
// propose and wait on; the returned func ends the wait. A caller must
// register before it proposes, so that the apply finds the id.
func (f *FSM) AnswerReserve(requestID string) (done func()) {
	if requestID == "" {
		return func() {} // an id-less reserve is always answered in full
	}
	a := &f.answering
	a.mu.Lock()
	if a.ids == nil {
		a.ids = make(map[string]int)
	}
	a.ids[requestID]++
	a.mu.Unlock()
	return func() {
		a.mu.Lock()
		if a.ids[requestID]--; a.ids[requestID] <= 0 {
			delete(a.ids, requestID)
		}
		a.mu.Unlock()
	}
}

// answers reports whether a caller here waits on the reserve with this
// request id: an id-less one may have any caller.
func (f *FSM) answers(requestID string) bool {
	if requestID == "" {
		return true
	}
	a := &f.answering
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.ids[requestID] > 0
}
