package rpc

import "testing"

func TestPollClaims(t *testing.T) {
	c := newPollClaims()
	if !c.claim("q", 1, 1) {
		t.Fatal("the first waiter may not propose for the one Ready job")
	}
	if c.claim("q", 1, 1) {
		t.Fatal("a second waiter proposes for a job already asked for")
	}
	if !c.claim("other", 1, 1) {
		t.Fatal("a claim on one queue blocks another queue")
	}
	if !c.claim("q", 2, 1) {
		t.Fatal("a second Ready job does not let a second waiter propose")
	}
	changed := c.changed()
	c.release("q", 1)
	select {
	case <-changed:
	default:
		t.Fatal("a release does not wake the waiters")
	}
	c.release("q", 1)
	if !c.claim("q", 1, 1) {
		t.Fatal("claims are not given back on release")
	}
	// Max 0 asks for one job; a big Max takes all the Ready jobs.
	c.release("q", 1)
	if !c.claim("q", 5, 0) || !c.claim("q", 5, 100) || c.claim("q", 5, 1) {
		t.Fatal("claims do not count max 0 as one and a big max as all")
	}
}
