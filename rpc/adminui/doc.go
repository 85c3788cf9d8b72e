// Package adminui is sepp's admin web UI: server-rendered pages over a node's
// rpc.Backend for the cluster, the node, the queues and their jobs, the
// dead-letter records an operator inspects, requeues, deletes or creates,
// and the bulk redrive tasks.
//
// A RateRing (ring.go) keeps each queue's counters as this node sampled
// them (by default every 10 s for an hour); the Queues and queue pages draw
// their rates and charts from it as inline SVG made on the server
// (chart.go). Filters (filter.go) narrow a tab by scanning it within a read;
// "act on all matching" (jobops.go) acts on what the filter matches, in
// chunks of one Raft entry each, after a confirmation naming the count.
//
// It owns sign-in (bcrypt-hashed passwords from the config, HMAC-signed
// HTTP-only SameSite=Strict session cookies), the viewer and operator roles,
// CSRF tokens on every state-changing form, and the forwarding of actions
// from a follower to the leader. Pages, CSS and JavaScript are embedded; the
// UI needs no build step and no external assets.
//
// Reads go through Backend.Read. A node first asks for a consistent read; a
// follower, refused that, serves its own replicated state (a stale read) and
// says so on the page. Writes go through the Backend's operator methods; a
// follower that answers "not the leader" forwards the already authorised
// action over HTTP to the leader's admin UI, which checks the session, the
// CSRF token and the role again before acting.
package adminui
