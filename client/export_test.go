package client

// QueuedAcks reports how many Acks wait for a free send slot (tests only).
func QueuedAcks(c *Client) int {
	c.acks.mu.Lock()
	defer c.acks.mu.Unlock()
	return len(c.acks.queue)
}
