package client

// AckSendersIdle reports whether no ack is queued and no call is on its way
// (tests only): every ack taken so far has had its answer.
func AckSendersIdle(c *Client) bool {
	c.acks.mu.Lock()
	defer c.acks.mu.Unlock()
	return len(c.acks.queue) == 0 && c.acks.senders == 0
}
