package config

import (
	"bytes"
	"errors"
	"fmt"
	"net"
	"net/url"
	"os"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/pelletier/go-toml/v2"

	"github.com/sepp-io/sepp/engine"
)

// Config is a whole node configuration file.
type Config struct {
	Server  Server  `toml:"server"`
	Cluster Cluster `toml:"cluster"`
	Limits  Limits  `toml:"limits"`
	Storage Storage `toml:"storage"`
	Queues  []Queue `toml:"queues"`
	Admin   Admin   `toml:"admin"`
	TLS     TLS     `toml:"tls"`
	Auth    Auth    `toml:"auth"`
	API     API     `toml:"api"`
	Tracing Tracing `toml:"tracing"`
	source  string  // the file it came from, for messages
}

// Server is this node's identity, listeners and files.
type Server struct {
	// NodeID names this node, unique within the cluster (1..128 bytes of
	// UTF-8).
	NodeID string `toml:"node_id"`
	// GRPCAddr is where the API listens: gRPC, Connect and gRPC-Web for
	// clients, workers and operators.
	GRPCAddr string `toml:"grpc_addr"`
	// HTTPAddr is where /metrics, /healthz (liveness), /readyz (readiness) and
	// the admin UI listen.
	HTTPAddr string `toml:"http_addr"`
	// RaftAddr is where this node listens for replication from the other
	// nodes.
	RaftAddr string `toml:"raft_addr"`
	// RaftAdvertise is the address other nodes dial; defaults to RaftAddr.
	RaftAdvertise string `toml:"raft_advertise"`
	// GRPCAdvertise and HTTPAdvertise are what followers hand to clients as
	// the leader's address; they default to the listen addresses.
	GRPCAdvertise string `toml:"grpc_advertise"`
	// HTTPAdvertise is the HTTP address followers name as the leader's;
	// defaults to HTTPAddr.
	HTTPAdvertise string `toml:"http_advertise"`
	// DataDir holds the Raft log, the stable store and the snapshots. Back it
	// up as described in docs/backup-and-restore.md.
	DataDir string `toml:"data_dir"`
	// LogLevel is one of trace, debug, info, warn, error, off.
	LogLevel string `toml:"log_level"`
	// LogJSON writes the log as JSON lines instead of text.
	LogJSON bool `toml:"log_json"`
	// MaxMessageBytes bounds one gRPC message in either direction
	// (advertised). It must exceed the largest job the [limits] allow
	// (payload, every custom field, names, attempt history) by 64 KiB, so a
	// job of exactly max_payload_bytes always goes through Enqueue and
	// EnqueueBatch. A reserve or a dead-letter drain answers with as many jobs
	// as fit: reserved jobs that do not fit are released at once, a drain
	// takes only the records that fit.
	MaxMessageBytes int `toml:"max_message_bytes"`
	// MaxLongPolls caps reserves waiting for work at once on this node.
	MaxLongPolls int `toml:"max_long_polls"`
	// MaxLongPollMS caps how long one reserve may wait for work.
	MaxLongPollMS int64 `toml:"max_long_poll_ms"`
	// MaxLongPollsPerConn caps reserves waiting at once on one client
	// connection, so one client cannot take every MaxLongPolls slot (a value
	// above MaxLongPolls leaves only the server's cap).
	MaxLongPollsPerConn int `toml:"max_long_polls_per_conn"`
	// ForwardToLeader makes a follower send the calls only the leader can
	// serve on to the leader and answer with its reply, so clients need no
	// redirect. Off, or with client certificates required on the API (the
	// node has none a peer's API would accept), followers answer NotLeader
	// with the leader's address instead.
	ForwardToLeader bool `toml:"forward_to_leader"`
	// ReadyMaxApplyLag is how many committed log entries a node may have
	// left to apply and still answer /readyz with 200: a node replaying
	// its log after a restart, or installing a snapshot, is not ready.
	ReadyMaxApplyLag uint64 `toml:"ready_max_apply_lag"`
	// MemoryLimit is the Go runtime's soft memory limit
	// (runtime/debug.SetMemoryLimit): "auto" (the default) is the memory
	// limit of the cgroup the node runs in less the larger of 10% and
	// 64 MiB (a quarter of a cgroup under 256 MiB), or none outside one:
	// the rest is for the page cache the cgroup charges beside the heap;
	// "off" is none; else a size such as "768MiB", "2GiB" or "500MB" (or
	// bytes). Near the limit the collector runs more often instead of
	// letting the heap grow; it never fails an allocation. The GOMEMLIMIT
	// environment variable, when set, wins.
	MemoryLimit string `toml:"memory_limit"`
	// GCPercent is the collector's heap growth target (GOGC, see
	// runtime/debug.SetGCPercent): a collection starts once the heap has
	// grown this many percent over what the last one left live. The default,
	// 50, keeps a node holding a million waiting jobs at 1.5 times its live
	// heap instead of twice. -1 turns the proportional target off (only the
	// memory limit then triggers collections). The GOGC environment
	// variable, when set, wins.
	GCPercent int `toml:"gc_percent"`
	// GCMinHeadroom is the least heap growth allowed before a collection
	// (a size such as "128MiB"; "0" turns it off). While the live heap is
	// small, GOGC is raised above gc_percent to give it this much room: a
	// node whose queues drain as they fill then collects a few times a
	// second instead of every few megabytes. A large heap runs on
	// gc_percent alone. Ignored when GOGC is set or gc_percent is -1.
	GCMinHeadroom string `toml:"gc_min_headroom"`
}

// GCMinHeadroomBytes interprets server.gc_min_headroom; 0 means off.
func (s Server) GCMinHeadroomBytes() (int64, error) {
	v := strings.TrimSpace(s.GCMinHeadroom)
	if v == "" || v == "0" || strings.EqualFold(v, "off") {
		return 0, nil
	}
	n, err := ParseSize(v)
	if err != nil {
		return 0, err
	}
	if n > 64<<30 {
		return 0, fmt.Errorf("%d bytes is above the maximum of 64 GiB", n)
	}
	return n, nil
}

// DefaultSnapshotCommandThreshold is cluster.snapshot_command_threshold's
// default: a restart replays at most about this many commands after its
// snapshot, some 7 s on one core, and a node under a mixed load of 10k
// jobs/s snapshots for it about as often as for snapshot_threshold.
const DefaultSnapshotCommandThreshold = 2_000_000

// DefaultGCPercent is server.gc_percent's default. The heap of a node is
// mostly its waiting jobs, long-lived and growing slowly, while requests
// allocate short-lived garbage: with Go's default of 100 a collection
// starts only once the heap has doubled, so a node with 300 MB of jobs sits
// at up to 600 MB. 50 bounds that at 1.5x for twice as many (short, mostly
// concurrent) collections; each costs a mark of the live heap, and the job
// payloads are pointer-free, so the mark walks the job records only.
const DefaultGCPercent = 50

// DefaultMaxResultBytes is limits.max_result_bytes's default: a result is
// a job's outcome (an id, a status, a small document), not a payload; 64
// KiB holds those and keeps a completed job's record small on disk.
// MaxMaxResultBytes is its upper bound, the default max_payload_bytes'
// 1 MiB times 16: above it a result belongs in a blob store, named by the
// result.
const (
	DefaultMaxResultBytes = 64 << 10
	MaxMaxResultBytes     = 16 << 20
)

// MemoryLimitBytes interprets server.memory_limit: the limit in bytes, or
// auto true for "auto" (the caller derives it from the cgroup), or 0 for
// none.
func (s Server) MemoryLimitBytes() (limit int64, auto bool, err error) {
	v := strings.TrimSpace(s.MemoryLimit)
	switch strings.ToLower(v) {
	case "", "auto":
		return 0, true, nil
	case "off", "none", "0":
		return 0, false, nil
	}
	n, err := ParseSize(v)
	if err != nil {
		return 0, false, err
	}
	if n < 64<<20 {
		return 0, false, fmt.Errorf("%d bytes is below the minimum of 64 MiB", n)
	}
	return n, false, nil
}

// ParseSize reads a byte size: a whole number with an optional unit, B, KB,
// MB, GB, TB (powers of 1000) or KiB, MiB, GiB, TiB (powers of 1024), case
// insensitive, with or without a space before the unit.
func ParseSize(s string) (int64, error) {
	t := strings.TrimSpace(s)
	i := 0
	for i < len(t) && t[i] >= '0' && t[i] <= '9' {
		i++
	}
	if i == 0 {
		return 0, fmt.Errorf("size %q: want a whole number with an optional unit (B, KB, MB, GB, TB, KiB, MiB, GiB, TiB)", s)
	}
	n, err := strconv.ParseInt(t[:i], 10, 64)
	if err != nil {
		return 0, fmt.Errorf("size %q: %w", s, err)
	}
	units := map[string]int64{
		"": 1, "b": 1,
		"kb": 1e3, "mb": 1e6, "gb": 1e9, "tb": 1e12,
		"kib": 1 << 10, "mib": 1 << 20, "gib": 1 << 30, "tib": 1 << 40,
	}
	mul, ok := units[strings.ToLower(strings.TrimSpace(t[i:]))]
	if !ok {
		return 0, fmt.Errorf("size %q: unknown unit %q (B, KB, MB, GB, TB, KiB, MiB, GiB, TiB)", s, strings.TrimSpace(t[i:]))
	}
	if n > (1<<63-1)/mul {
		return 0, fmt.Errorf("size %q: too large", s)
	}
	return n * mul, nil
}

// Peer is one member of a static cluster.
type Peer struct {
	// ID is the member's server.node_id.
	ID string `toml:"id"`
	// RaftAddr is the member's replication address.
	RaftAddr string `toml:"raft_addr"`
	// GRPCAddr is the member's API address, which followers name to clients.
	GRPCAddr string `toml:"grpc_addr"`
	// HTTPAddr is the member's HTTP address (admin UI, metrics).
	HTTPAddr string `toml:"http_addr"`
}

// Cluster is the Raft membership and timing.
type Cluster struct {
	// Peers is the static cluster, this node included. Empty: a cluster of
	// one that bootstraps itself.
	Peers []Peer `toml:"peers"`
	// Bootstrap forms the cluster from Peers on first start (a node with
	// existing state never bootstraps again). Set it false on a node that
	// joins a running cluster instead.
	Bootstrap *bool `toml:"bootstrap"`
	// HeartbeatTimeoutMS is how long a follower hears nothing from the leader
	// before it runs a pre-vote; the leader sends heartbeats every tenth of
	// it. Lower values elect on the CPU stalls of a busy host
	// (cluster/DESIGN.md, "Timeouts").
	HeartbeatTimeoutMS int64 `toml:"heartbeat_timeout_ms"`
	// ElectionTimeoutMS is how long a candidate waits for votes before it
	// tries again.
	ElectionTimeoutMS int64 `toml:"election_timeout_ms"`
	// LeaderLeaseTimeoutMS is how long a leader may hear from no quorum
	// before it sends three quick heartbeat rounds (a quarter of this each)
	// and, if none reaches a quorum, steps down; at most HeartbeatTimeoutMS.
	LeaderLeaseTimeoutMS int64 `toml:"leader_lease_timeout_ms"`
	// CommitTimeoutMS is how long the leader waits, with nothing new to send,
	// before it tells the followers the commit index.
	CommitTimeoutMS int64 `toml:"commit_timeout_ms"`
	// SnapshotThreshold is how many log entries accumulate before the node
	// takes a snapshot and trims its log.
	SnapshotThreshold int64 `toml:"snapshot_threshold"`
	// SnapshotCommandThreshold is about how many commands (an enqueue, an
	// ack; each job of a batch counted) the node applies between two
	// snapshots, however few log entries carried them. Each member takes
	// its snapshots at a place of its own in the log, so no two members
	// snapshot at once (three members: a third of this apart). A restart
	// replays the commands after the newest snapshot, at most 1.5 times
	// this (about 300,000 commands a second on one core). 0 leaves
	// snapshots to SnapshotThreshold alone.
	SnapshotCommandThreshold int64 `toml:"snapshot_command_threshold"`
	// SnapshotIntervalMS is how often the node checks SnapshotThreshold;
	// SnapshotCommandThreshold is checked every 100 ms, or at this
	// interval if it is shorter.
	SnapshotIntervalMS int64 `toml:"snapshot_interval_ms"`
	// LeaseGraceMS is how much a new leader extends every live lease before it
	// serves, so an election does not redeliver jobs in flight.
	LeaseGraceMS int64 `toml:"lease_grace_ms"`
	// MaxClockSkewMS is how far this node's clock may be off the other
	// members' before it may not lead: the members compare clocks every
	// second, and a node whose clock a majority of them finds off by more
	// hands leadership over, and is not ready, until its clock agrees
	// again. It is also the largest jump of the wall clock whose time the
	// leader stamps: across a larger one, stamped time follows the
	// monotonic clock. Keep clocks synchronised (NTP); 1000 leaves room for
	// a slow answer on a loaded host (docs/fault-testing.md, clock faults).
	MaxClockSkewMS int64 `toml:"max_clock_skew_ms"`
	// StoreWriteTimeoutMS is how long a leader's log write may stall before
	// the leader steps down.
	StoreWriteTimeoutMS int64 `toml:"store_write_timeout_ms"`
	// MaxCommandsPerEntry is how many operations group commit merges into one
	// log entry at most.
	MaxCommandsPerEntry int `toml:"max_commands_per_entry"`
	// MaxEntriesInFlight is how many log entries the proposer keeps being
	// replicated at once (fewer, larger entries: cluster/DESIGN.md).
	MaxEntriesInFlight int `toml:"max_entries_in_flight"`
	// MaxEntryBytes is where group commit stops merging operations into
	// one log entry, and the size an EnqueueBatch above it is split into.
	// Not a limit on requests: one larger operation gets an entry of its
	// own, up to server.max_message_bytes.
	MaxEntryBytes int `toml:"max_entry_bytes"`
	// SnapshotsRetained is how many snapshots the data directory keeps.
	SnapshotsRetained int `toml:"snapshots_retained"`
	// TrailingLogs is how many log entries a snapshot leaves behind for
	// followers that lag. A follower behind by more receives the whole
	// snapshot instead of the entries it missed. The default keeps about a
	// minute of a mixed load at 10k jobs/s (some 28k entries), so a
	// follower stopped for a minute catches up from the log; the cost is
	// disk, about 9 KiB per entry under that load (some 600 MiB at the
	// default). Lower it where disk is short and a snapshot install is
	// cheap.
	TrailingLogs int64 `toml:"trailing_logs"`
	// ShutdownTransferWaitMS is how long a leader that is stopping waits for
	// another node to take over before it stops anyway.
	ShutdownTransferWaitMS int64 `toml:"shutdown_transfer_wait_ms"`
	// DetectLeaderCrash lets a follower that sees the leader's raft
	// connections end, and the leader's raft address refuse connections,
	// call an election at once rather than after heartbeat_timeout_ms: a
	// killed leader is replaced in tens of milliseconds. Off, only the
	// heartbeat timeout detects a dead leader.
	DetectLeaderCrash bool `toml:"detect_leader_crash"`
}

// Limits is the [limits] table: the spec's producer and retry settings.
type Limits struct {
	// DefaultPriority is the priority of a job that sets none: 0..9, 9
	// highest.
	DefaultPriority uint32 `toml:"default_priority"`
	// DefaultMaxAttempts is how many deliveries a job that sets no
	// max_attempts gets before it dies; at most MaxAttemptsCeiling.
	DefaultMaxAttempts uint32 `toml:"default_max_attempts"`
	// MaxAttemptsCeiling clamps a job's max_attempts: a larger value is
	// lowered to it, not rejected.
	MaxAttemptsCeiling uint32 `toml:"max_attempts_ceiling"`
	// RetryDelayMS is the base delay of a Default nack; 0 makes the job Ready
	// again at once.
	RetryDelayMS int64 `toml:"retry_delay_ms"`
	// RetryBackoff is "none" (every retry waits RetryDelayMS) or "exponential"
	// (the delay doubles per attempt, up to RetryDelayMaxMS), with up to 25%
	// jitter derived from the job id.
	RetryBackoff string `toml:"retry_backoff"`
	// RetryDelayMaxMS caps the exponential backoff's delay.
	RetryDelayMaxMS int64 `toml:"retry_delay_max_ms"`
	// MaxScheduleHorizonMS is how far ahead scheduled_at may be: later is
	// rejected with ScheduledTooFar; retry delays are clamped to it.
	MaxScheduleHorizonMS int64 `toml:"max_schedule_horizon_ms"`
	// MaxReserveBatch is the most jobs one reserve or one dead-letter drain
	// returns (advertised in GetServerInfo).
	MaxReserveBatch int `toml:"max_reserve_batch"`
	// DefaultLeaseMS is the lease of a reserve that names none.
	DefaultLeaseMS int64 `toml:"default_lease_ms"`
	// MaxLeaseMS is the longest lease; a longer one is clamped to it.
	MaxLeaseMS int64 `toml:"max_lease_ms"`
	// MaxPayloadBytes is the largest job payload (advertised); one byte more
	// is InvalidArgument naming payload.
	MaxPayloadBytes int `toml:"max_payload_bytes"`
	// MaxResultBytes is the largest result an Ack may carry (advertised),
	// 1..16 MiB, default 64 KiB; one byte more is InvalidArgument naming
	// result and the limit. The leader checks it before proposing, so the
	// leader's value applies; server.max_message_bytes must exceed it by
	// at least 64 KiB.
	MaxResultBytes int `toml:"max_result_bytes"`
	// MaxBatchSize is the most jobs in one EnqueueBatch (advertised).
	MaxBatchSize int `toml:"max_batch_size"`
	// MaxCustomFields is the most custom fields on one job.
	MaxCustomFields int `toml:"max_custom_fields"`
	// MaxCustomFieldBytes bounds the key and value of one custom field
	// together.
	MaxCustomFieldBytes int `toml:"max_custom_field_bytes"`
	// MaxJobTypeBytes bounds a job type's name.
	MaxJobTypeBytes int `toml:"max_job_type_bytes"`
	// IdempotencyWindowMS is how long an idempotency key is remembered: an
	// enqueue repeating it within the window returns the first job instead of
	// adding one, which covers client retries through a failover.
	IdempotencyWindowMS int64 `toml:"idempotency_window_ms"`
	// MaxIdempotencyKeys is how many idempotency keys a node holds at most,
	// about 75 bytes each; once full, IdempotencyMinWindowMS decides between
	// forgetting the oldest early and refusing the new key.
	MaxIdempotencyKeys int `toml:"max_idempotency_keys"`
	// IdempotencyMinWindowMS is how long a key is kept at least once
	// max_idempotency_keys are held: a new key then makes the oldest be
	// forgotten early if it is this old, and is refused otherwise. 0 never
	// forgets early (every new key past the limit is refused); above
	// idempotency_window_ms it is the window.
	IdempotencyMinWindowMS int64 `toml:"idempotency_min_window_ms"`
	// MaxQueueLength is the most jobs one queue holds; a full queue refuses
	// enqueues with ResourceExhausted and never drops a job. 0 is unbounded;
	// per queue: max_length.
	MaxQueueLength int `toml:"max_queue_length"`
	// PayloadBudget is the budget payloads count against: "memory" (the
	// default: the memory budget counts them, as releases before the
	// payload store did, although every node keeps them on disk, so the
	// memory budget is conservative) or "disk" (the memory budget counts
	// job records and keys only, and max_disk_bytes counts payloads: a
	// backlog grows far past memory). The leader's config decides for the
	// cluster, once every member runs a release that has it; "disk" cannot
	// be undone. A node keeps its payload store across restarts but reads
	// its snapshot, which still carries the payloads, so with "disk" a
	// restart takes time in proportion to the backlog's bytes
	// (docs/architecture.md).
	PayloadBudget string `toml:"payload_budget"`
	// MaxDiskBytes is the budget of payload bytes the jobs and dead-letter
	// records may hold in each node's payload store on disk, with
	// payload_budget "disk": above it enqueues are refused with
	// ResourceExhausted while workers drain. 0 (the default) is unbounded:
	// the node's own check of its disk's free space still refuses writes
	// before the disk fills.
	MaxDiskBytes int64 `toml:"max_disk_bytes"`
	// MaxMemoryBytes is the budget of bytes the queues may hold (jobs,
	// custom fields, keys, dead-letter records, as the engine counts them;
	// payloads too on a cluster with a member older than the payload
	// store): above it enqueues are refused with ResourceExhausted
	// while workers drain. 0 (the default) derives it: max_memory_share of
	// the smallest memory limit among the cluster's members (each member's
	// cgroup limit, GOMEMLIMIT or server.memory_limit when set, else its
	// physical memory, as it reports them to the leader; `sepp cluster
	// status` shows them), so that every member can restart with the state
	// it holds; the leader proposes it again when a member's limit or the
	// membership changes.
	MaxMemoryBytes int64 `toml:"max_memory_bytes"`
	// MaxMemoryShare is the share of the smallest member's memory limit
	// the default budget takes, 0..0.9: the rest is for the collector's headroom
	// (gc_percent), a snapshot being restored beside the running state (a
	// follower's InstallSnapshot holds both until the swap: twice the
	// budget), the Raft log and requests. Default 0.33, so that doubling
	// plus the runtime's own fits in the soft limit (server.memory_limit
	// auto: 75% of a 256 MiB cgroup, 90% from 640 MiB up). The collector
	// uses the room up to the soft limit (gc_min_headroom), so the RSS
	// follows that limit, not the budget. 0 with
	// max_memory_bytes 0 leaves the queues unbounded.
	MaxMemoryShare *float64 `toml:"max_memory_share"`
	// MaxDeadLetters is how many dead-letter records are retained at most; a
	// full store refuses, it never drops a record silently.
	MaxDeadLetters int `toml:"max_dead_letters"`
	// AttemptHistory is how many past attempts each job remembers, 0..1000
	// (start, end, duration, worker, lease token, outcome, nack directive,
	// reason); the oldest go first. An entry holds up to about 4.4 KB (a
	// 256-byte worker id, a 4 KiB reason): it counts against
	// max_memory_bytes, and server.max_message_bytes must hold a job with
	// a full history.
	AttemptHistory int `toml:"attempt_history"`
	// Strict rejects enqueues to queues that no [[queues]] entry names.
	Strict bool `toml:"strict"`
}

// Storage is the [storage] table.
type Storage struct {
	// DeadLetterRetentionMS keeps dead-letter records this long; 0 (the
	// default) drops dead jobs on the spot. Restart-only.
	DeadLetterRetentionMS int64 `toml:"dead_letter_retention_ms"`
	// LogStore is the raft log store: "wal" (one write and one fsync per
	// append) or "bolt" (raft-boltdb). Empty (the default) keeps the store
	// the data directory holds, and gives a new directory the WAL; naming
	// the store the directory does not hold is refused at start.
	LogStore string `toml:"log_store"`
	// WALSegmentMB is the size of each preallocated WAL segment file.
	WALSegmentMB int `toml:"wal_segment_mb"`
}

// Queue is one [[queues]] entry; unset keys inherit [limits] (a key
// [limits] does not have is off). The entry is applied once, the first
// time the cluster sees it; its settings then change at runtime (sepp
// queues update) until the entry is edited.
type Queue struct {
	// Name is the queue the entry configures.
	Name string `toml:"name"`
	// DefaultPriority overrides the [limits] default_priority for this queue.
	DefaultPriority *uint32 `toml:"default_priority"`
	// DefaultMaxAttempts overrides the [limits] default_max_attempts for this
	// queue.
	DefaultMaxAttempts *uint32 `toml:"default_max_attempts"`
	// RetryDelayMS overrides the [limits] retry_delay_ms for this queue.
	RetryDelayMS *int64 `toml:"retry_delay_ms"`
	// RetryBackoff overrides the [limits] retry_backoff for this queue.
	RetryBackoff *string `toml:"retry_backoff"`
	// RetryDelayMaxMS overrides the [limits] retry_delay_max_ms for this
	// queue.
	RetryDelayMaxMS *int64 `toml:"retry_delay_max_ms"`
	// MaxScheduleHorizonMS overrides the [limits] max_schedule_horizon_ms for
	// this queue.
	MaxScheduleHorizonMS *int64 `toml:"max_schedule_horizon_ms"`
	// MaxLength is the most jobs this queue holds (the [limits]
	// max_queue_length by default).
	MaxLength *int `toml:"max_length"`
	// MaxMemoryBytes is the queue's own budget of held bytes, under the
	// global one.
	MaxMemoryBytes *int64 `toml:"max_memory_bytes"`
	// DeadLetterQueue, when set, also enqueues every job that dies in this
	// queue onto that queue as a new job. It must name another [[queues]]
	// entry of the file.
	DeadLetterQueue string `toml:"dead_letter_queue"`
	// MaxReserved is the most jobs of the queue reserved at once, across
	// all workers; a waiting reserve waits past it (0: no limit).
	MaxReserved int `toml:"max_reserved"`
	// RateLimit is the most reservations per RatePeriodMS, a token bucket
	// on the leader's clock that every replica replays alike (0: no limit).
	RateLimit int `toml:"rate_limit"`
	// RatePeriodMS is RateLimit's period in milliseconds (default 1000).
	RatePeriodMS int64 `toml:"rate_period_ms"`
	// RateBurst is the most reservations the bucket grants at once
	// (default RateLimit).
	RateBurst int `toml:"rate_burst"`
	// ConcurrencyKey names the custom field whose value MaxPerKey limits,
	// e.g. one job at a time per customer.
	ConcurrencyKey string `toml:"concurrency_key"`
	// MaxPerKey is the most jobs reserved at once per value of
	// ConcurrencyKey (0: no limit).
	MaxPerKey int `toml:"max_per_key"`
	// MaxWaitMS expires a job not reserved this many milliseconds after it
	// first became due: it dies with the dead-letter cause expired (0:
	// none). A job's own ttl or expires_at may set an earlier deadline.
	MaxWaitMS int64 `toml:"max_wait_ms"`
	// FairnessKey names the custom field whose values take turns within a
	// priority level, e.g. tenant: reserve rotates over the values with
	// Ready jobs so one value's burst cannot starve the others. Jobs
	// without the field share one turn. Not combined with max_per_key.
	FairnessKey string `toml:"fairness_key"`
	// Tags label the queue, e.g. tags = { team = "payments", env = "prod" },
	// for the admin UI's filter and ListQueues; they change nothing about
	// how it runs. At most 50; a key is 1..128 bytes of letters, digits,
	// spaces and _ . : / = + - @, a value at most 256 bytes.
	Tags map[string]string `toml:"tags"`
	// CompletedRetentionMS keeps each acked job, with its worker's result,
	// this many milliseconds (GetJob, ListJobs state completed, WaitJob);
	// 0, the default, keeps none, and an ack carrying a result is then
	// refused. At most 2592000000 (30 days). Each kept job costs 16 bytes
	// of memory on every node and its record (result included) on disk.
	CompletedRetentionMS int64 `toml:"completed_retention_ms"`
}

// Admin is the [admin] table: the web UI's sign-in.
type Admin struct {
	// Auth turns sign-in on. Off, the UI listens on loopback only unless
	// AllowUnauthenticatedRemote is set.
	Auth bool `toml:"auth"`
	// AllowUnauthenticatedRemote serves the UI without sign-in beyond loopback
	// (not advised).
	AllowUnauthenticatedRemote bool `toml:"allow_unauthenticated_remote"`
	// Users are the sign-ins of the UI when Auth is on.
	Users []AdminUser `toml:"users"`
	// SessionKey signs session cookies (at least 32 bytes). Give every node
	// the same key so one sign-in works on all of them and a follower can
	// forward actions to the leader; empty: a random key per start.
	SessionKey string `toml:"session_key"`
	// SessionTTLMS is how long a sign-in lasts; 0 means 12 hours.
	SessionTTLMS int64 `toml:"session_ttl_ms"`
}

// AdminUser is one sign-in: a bcrypt-style password hash and a role.
type AdminUser struct {
	// Name is what the user types to sign in.
	Name string `toml:"name"`
	// PasswordHash is the bcrypt hash `sepp hash-password` prints; never the
	// password.
	PasswordHash string `toml:"password_hash"`
	// Role is "viewer" (read only) or "operator" (requeue, delete, dead-
	// letter, pause, resume).
	Role string `toml:"role"`
}

// TLS is the [tls] table: PEM file paths, reread on SIGHUP. Empty paths
// leave the listener in plaintext.
type TLS struct {
	// CertFile and KeyFile are the server certificate of the gRPC API and
	// (with HTTP) of the HTTP listener.
	CertFile string `toml:"cert_file"`
	// KeyFile is the private key of CertFile.
	KeyFile string `toml:"key_file"`
	// ClientCAFile, when set, turns on mutual TLS on the gRPC API: every
	// client must present a certificate signed by one of these CAs.
	ClientCAFile string `toml:"client_ca_file"`
	// HTTP serves /metrics, /healthz and the admin UI over TLS with the same
	// certificate (no client certificate asked: browsers sign in instead).
	HTTP bool `toml:"http"`
	// RaftCertFile, RaftKeyFile and RaftCAFile turn on mutual TLS between
	// nodes: the node presents its cluster certificate and accepts only
	// peers whose certificate the cluster CA signed. All three or none.
	RaftCertFile string `toml:"raft_cert_file"`
	// RaftKeyFile is the private key of RaftCertFile.
	RaftKeyFile string `toml:"raft_key_file"`
	// RaftCAFile is the cluster CA: only nodes whose certificate it signed can
	// join or replicate.
	RaftCAFile string `toml:"raft_ca_file"`
}

// APIEnabled reports whether the gRPC API is served over TLS.
func (t TLS) APIEnabled() bool { return t.CertFile != "" }

// RaftEnabled reports whether nodes talk mutual TLS.
func (t TLS) RaftEnabled() bool { return t.RaftCertFile != "" }

// Auth is the [auth] table: bearer tokens on the gRPC API.
type Auth struct {
	// Enabled requires a token with the right role on every call except
	// health and reflection.
	Enabled bool `toml:"enabled"`
	// Tokens are the accepted API tokens and their roles.
	Tokens []AuthToken `toml:"tokens"`
}

// AuthToken is one [[auth.tokens]] entry. The token itself is never in the
// file: only its SHA-256 (`sepp hash-token`).
type AuthToken struct {
	// Name identifies the token in metrics and logs; the token itself never
	// appears.
	Name string `toml:"name"`
	// SHA256 is the token's SHA-256 in hex, as `sepp hash-token` prints it.
	SHA256 string `toml:"sha256"`
	// Roles are what the token may do: producer (enqueue), worker (reserve,
	// ack, nack, release, extend), viewer (info and listings), operator
	// (drain, requeue, delete, dead-letter, pause, resume), admin (cluster
	// join, remove, transfer).
	Roles []string `toml:"roles"`
}

// API is the [api] table: how browsers may reach the API port (gRPC,
// Connect and gRPC-Web on server.grpc_addr).
type API struct {
	// CORSAllowedOrigins are the web origins (scheme://host[:port], exactly
	// as a browser sends them in Origin) whose pages may call the API port
	// with the Connect or gRPC-Web protocol: their preflights are answered
	// and their responses readable. Empty (the default) turns CORS off: the
	// port answers no preflight and browsers keep other origins' pages from
	// calling it. No wildcard: name every origin.
	CORSAllowedOrigins []string `toml:"cors_allowed_origins"`
	// CORSAllowCredentials lets those pages send credentials the browser
	// holds (cookies, TLS client certificates under tls.client_ca_file:
	// fetch's credentials "include"). An API token in the Authorization
	// header needs no credentials.
	CORSAllowCredentials bool `toml:"cors_allow_credentials"`
}

// Tracing is the [tracing] table: OpenTelemetry spans of the node's
// Enqueue, Reserve, Ack and Nack calls, joined to each job's trace
// (docs/tracing.md). Off unless otlp_endpoint is set; off, the node builds
// no exporter and records nothing.
type Tracing struct {
	// OTLPEndpoint is the OTLP/gRPC collector the spans are exported to,
	// as a URL: "http://127.0.0.1:4317" (plaintext) or
	// "https://collector.example:4317" (TLS, verified against the system's
	// roots). Empty (the default) turns tracing off.
	OTLPEndpoint string `toml:"otlp_endpoint"`
	// ServiceName is the service.name resource attribute of the spans.
	ServiceName string `toml:"service_name"`
	// SampleRatio is the share of traces a node samples when the job's
	// trace context leaves the choice to it, 0..1; a job whose producer
	// sampled (or did not) is followed as the producer decided.
	SampleRatio float64 `toml:"sample_ratio"`
}

// TokenRoles lists the role names a token may hold.
var TokenRoles = []string{"producer", "worker", "viewer", "operator", "admin"}

// Default returns a configuration with every documented default: a single
// node with its data in ./sepp-data and gRPC on localhost:50051.
func Default() Config {
	lim := engine.DefaultLimits()
	t := true
	return Config{
		Server: Server{
			NodeID:          "sepp-1",
			GRPCAddr:        "127.0.0.1:50051",
			HTTPAddr:        "127.0.0.1:8080",
			RaftAddr:        "127.0.0.1:7050",
			DataDir:         "sepp-data",
			LogLevel:        "info",
			MaxMessageBytes: 16 << 20,
			MaxLongPolls:    10000,
			MaxLongPollMS:   30000,

			MaxLongPollsPerConn: 64,
			ForwardToLeader:     true,
			ReadyMaxApplyLag:    1000,
			MemoryLimit:         "auto",
			GCPercent:           DefaultGCPercent,
			GCMinHeadroom:       "128MiB",
		},
		Cluster: Cluster{
			Bootstrap:                &t,
			HeartbeatTimeoutMS:       500, // cluster.DefaultConfig says why
			ElectionTimeoutMS:        500,
			LeaderLeaseTimeoutMS:     500,
			CommitTimeoutMS:          5,
			SnapshotThreshold:        65536,
			SnapshotCommandThreshold: DefaultSnapshotCommandThreshold,
			SnapshotIntervalMS:       30000,
			LeaseGraceMS:             5000,
			MaxClockSkewMS:           1000, // cluster.DefaultMaxClockSkew says why
			StoreWriteTimeoutMS:      5000,
			MaxCommandsPerEntry:      128,
			MaxEntriesInFlight:       4,
			MaxEntryBytes:            512 << 10,
			SnapshotsRetained:        2,
			TrailingLogs:             65536,
			ShutdownTransferWaitMS:   2000,
			DetectLeaderCrash:        true,
		},
		Limits: Limits{
			DefaultPriority:        lim.DefaultPriority,
			DefaultMaxAttempts:     lim.DefaultMaxAttempts,
			MaxAttemptsCeiling:     lim.MaxAttemptsCeiling,
			RetryDelayMS:           lim.RetryDelay.Milliseconds(),
			RetryBackoff:           backoffName(lim.RetryBackoff),
			RetryDelayMaxMS:        lim.RetryDelayMax.Milliseconds(),
			MaxScheduleHorizonMS:   lim.MaxScheduleHorizon.Milliseconds(),
			MaxReserveBatch:        lim.MaxReserveBatch,
			DefaultLeaseMS:         lim.DefaultLease.Milliseconds(),
			MaxLeaseMS:             lim.MaxLease.Milliseconds(),
			MaxPayloadBytes:        lim.MaxPayloadBytes,
			MaxResultBytes:         DefaultMaxResultBytes,
			MaxBatchSize:           lim.MaxBatchSize,
			MaxCustomFields:        lim.MaxCustomFields,
			MaxCustomFieldBytes:    lim.MaxCustomFieldBytes,
			MaxJobTypeBytes:        lim.MaxJobTypeBytes,
			IdempotencyWindowMS:    lim.IdempotencyWindow.Milliseconds(),
			MaxIdempotencyKeys:     lim.MaxIdempotencyKeys,
			IdempotencyMinWindowMS: lim.IdempotencyMinWindow.Milliseconds(),
			MaxQueueLength:         lim.MaxQueueLength,
			MaxDeadLetters:         lim.MaxDeadLetters,
			AttemptHistory:         lim.AttemptHistory,
			Strict:                 lim.Strict,
		},
		Storage: Storage{DeadLetterRetentionMS: lim.DeadLetterRetention.Milliseconds(), WALSegmentMB: 64},
		TLS:     TLS{HTTP: true},
		Tracing: Tracing{ServiceName: "sepp", SampleRatio: 1},
	}
}

// Load reads and validates a TOML file; keys it leaves out keep Default's
// values.
func Load(path string) (Config, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return Config{}, fmt.Errorf("config: %w", err)
	}
	cfg, err := Parse(data)
	if err != nil {
		return Config{}, fmt.Errorf("config %s: %w", path, err)
	}
	cfg.source = path
	return cfg, nil
}

// Parse decodes TOML over the defaults, strictly, and validates the result.
func Parse(data []byte) (Config, error) {
	cfg := Default()
	dec := toml.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&cfg); err != nil {
		return Config{}, describeDecodeError(err)
	}
	if err := cfg.Validate(); err != nil {
		return Config{}, err
	}
	return cfg, nil
}

func describeDecodeError(err error) error {
	var strict *toml.StrictMissingError
	if errors.As(err, &strict) {
		var b strings.Builder
		for i, e := range strict.Errors {
			if i > 0 {
				b.WriteString("; ")
			}
			row, col := e.Position()
			fmt.Fprintf(&b, "line %d, column %d: unknown key %q", row, col, strings.Join(e.Key(), "."))
		}
		return fmt.Errorf("%s", b.String())
	}
	var de *toml.DecodeError
	if errors.As(err, &de) {
		row, col := de.Position()
		return fmt.Errorf("line %d, column %d: %s", row, col, de.Error())
	}
	return err
}

// Validate reports every contradiction in the file before anything starts:
// the node's own settings here, the queue behaviour through the engine.
func (c Config) Validate() error {
	var errs []error
	add := func(format string, args ...any) { errs = append(errs, fmt.Errorf(format, args...)) }

	declared := make(map[string]bool, len(c.Queues))
	for _, q := range c.Queues {
		declared[q.Name] = true
	}
	for _, q := range c.Queues {
		// A typo would send dead jobs to a queue nobody watches: the
		// target must be one of the file's queues (a queue that names
		// itself is refused with the engine's checks).
		if t := q.DeadLetterQueue; t != "" && t != q.Name && !declared[t] {
			add("queues[%q].dead_letter_queue: queue %q is not declared in this file; add a [[queues]] entry named %q", q.Name, t, t)
		}
		// Checked in milliseconds before the conversion, which would
		// overflow for a huge value and could wrap into the range.
		if q.RatePeriodMS < 0 || q.RatePeriodMS > 3_600_000 {
			add("queues[%q].rate_period_ms: must be 0..3600000 (0 is 1000), got %d", q.Name, q.RatePeriodMS)
		}
	}

	s := c.Server
	if s.NodeID == "" || !utf8.ValidString(s.NodeID) || len(s.NodeID) > 128 {
		add("server.node_id: must be 1..128 bytes of UTF-8, got %q", s.NodeID)
	}
	for _, a := range []struct{ key, v string }{
		{"server.grpc_addr", s.GRPCAddr}, {"server.http_addr", s.HTTPAddr}, {"server.raft_addr", s.RaftAddr},
	} {
		if err := checkHostPort(a.v); err != nil {
			add("%s: %v", a.key, err)
		}
	}
	for _, a := range []struct{ key, v string }{
		{"server.raft_advertise", s.RaftAdvertise}, {"server.grpc_advertise", s.GRPCAdvertise}, {"server.http_advertise", s.HTTPAdvertise},
	} {
		if a.v == "" {
			continue
		}
		if err := checkHostPort(a.v); err != nil {
			add("%s: %v", a.key, err)
		}
	}
	if s.DataDir == "" {
		add("server.data_dir: must be set")
	}
	switch strings.ToLower(s.LogLevel) {
	case "trace", "debug", "info", "warn", "error", "off":
	default:
		add("server.log_level: must be one of trace, debug, info, warn, error, off; got %q", s.LogLevel)
	}
	if s.MaxMessageBytes < 1<<20 || s.MaxMessageBytes > 256<<20 {
		add("server.max_message_bytes: must be 1 MiB..256 MiB, got %d", s.MaxMessageBytes)
	}
	// One job of the largest size the limits allow (payload, every custom
	// field, names, history) must fit a request and a reserve's response,
	// or max_payload_bytes is a limit no client can reach.
	if job := engine.MaxJobBytes(engine.Limits{
		MaxPayloadBytes: c.Limits.MaxPayloadBytes, MaxCustomFields: c.Limits.MaxCustomFields,
		MaxCustomFieldBytes: c.Limits.MaxCustomFieldBytes, MaxJobTypeBytes: c.Limits.MaxJobTypeBytes, AttemptHistory: c.Limits.AttemptHistory,
	}); s.MaxMessageBytes < job+64<<10 {
		add("server.max_message_bytes (%d) must exceed the largest job the limits allow (%d bytes: limits.max_payload_bytes %d, max_custom_fields x max_custom_field_bytes, names, attempt_history) by at least 64 KiB",
			s.MaxMessageBytes, job, c.Limits.MaxPayloadBytes)
	}
	if r := c.Limits.MaxResultBytes; r < 1 || r > MaxMaxResultBytes {
		add("limits.max_result_bytes: must be 1..%d, got %d", MaxMaxResultBytes, r)
	} else if s.MaxMessageBytes < r+64<<10 {
		add("server.max_message_bytes (%d) must exceed limits.max_result_bytes (%d) by at least 64 KiB", s.MaxMessageBytes, r)
	}
	if s.ReadyMaxApplyLag < 1 || s.ReadyMaxApplyLag > 1<<30 {
		add("server.ready_max_apply_lag: must be 1..%d entries, got %d", 1<<30, s.ReadyMaxApplyLag)
	}
	if s.MaxLongPolls < 1 {
		add("server.max_long_polls: must be at least 1, got %d", s.MaxLongPolls)
	}
	if s.MaxLongPollMS < 0 || s.MaxLongPollMS > 300000 {
		add("server.max_long_poll_ms: must be 0..300000, got %d", s.MaxLongPollMS)
	}
	if s.MaxLongPollsPerConn < 1 {
		add("server.max_long_polls_per_conn: must be at least 1, got %d", s.MaxLongPollsPerConn)
	}
	if _, _, err := s.MemoryLimitBytes(); err != nil {
		add("server.memory_limit: must be auto, off or a size such as 768MiB: %v", err)
	}
	if _, err := s.GCMinHeadroomBytes(); err != nil {
		add("server.gc_min_headroom: %v", err)
	}
	if s.GCPercent < -1 || s.GCPercent == 0 || s.GCPercent > 10000 {
		add("server.gc_percent: must be 1..10000, or -1 for off; got %d", s.GCPercent)
	}
	switch c.Limits.PayloadBudget {
	case "", "memory", "disk":
	default:
		add("limits.payload_budget: must be \"memory\" or \"disk\", got %q", c.Limits.PayloadBudget)
	}
	if share := c.Limits.MemoryShare(); !(share >= 0 && share <= 0.9) {
		add("limits.max_memory_share: must be 0..0.9 (0: no derived budget), got %v", share)
	}

	cl := c.Cluster
	positive := []struct {
		key string
		v   int64
	}{
		{"cluster.heartbeat_timeout_ms", cl.HeartbeatTimeoutMS},
		{"cluster.election_timeout_ms", cl.ElectionTimeoutMS},
		{"cluster.leader_lease_timeout_ms", cl.LeaderLeaseTimeoutMS},
		{"cluster.commit_timeout_ms", cl.CommitTimeoutMS},
		{"cluster.snapshot_threshold", cl.SnapshotThreshold},
		{"cluster.snapshot_interval_ms", cl.SnapshotIntervalMS},
		{"cluster.store_write_timeout_ms", cl.StoreWriteTimeoutMS},
		{"cluster.max_commands_per_entry", int64(cl.MaxCommandsPerEntry)},
		{"cluster.max_entries_in_flight", int64(cl.MaxEntriesInFlight)},
		{"cluster.snapshots_retained", int64(cl.SnapshotsRetained)},
	}
	for _, p := range positive {
		if p.v <= 0 {
			add("%s: must be positive, got %d", p.key, p.v)
		}
	}
	if st := c.Storage; st.LogStore != "" && st.LogStore != "wal" && st.LogStore != "bolt" {
		add("storage.log_store: must be \"wal\" or \"bolt\", got %q", st.LogStore)
	}
	if mb := c.Storage.WALSegmentMB; mb < 1 || mb > 1024 {
		add("storage.wal_segment_mb: must be 1..1024, got %d", mb)
	}
	if cl.LeaseGraceMS < 0 {
		add("cluster.lease_grace_ms: must not be negative, got %d", cl.LeaseGraceMS)
	}
	if cl.MaxClockSkewMS < 10 || cl.MaxClockSkewMS > 3_600_000 {
		add("cluster.max_clock_skew_ms: must be 10..3600000 (10ms..1h), got %d", cl.MaxClockSkewMS)
	}
	if cl.SnapshotCommandThreshold < 0 {
		add("cluster.snapshot_command_threshold: must not be negative (0 turns it off), got %d", cl.SnapshotCommandThreshold)
	}
	if cl.TrailingLogs < 0 {
		add("cluster.trailing_logs: must not be negative, got %d", cl.TrailingLogs)
	}
	if cl.ShutdownTransferWaitMS < 0 {
		add("cluster.shutdown_transfer_wait_ms: must not be negative, got %d", cl.ShutdownTransferWaitMS)
	}
	if cl.LeaderLeaseTimeoutMS > cl.HeartbeatTimeoutMS && cl.HeartbeatTimeoutMS > 0 {
		add("cluster.leader_lease_timeout_ms (%d) must not exceed cluster.heartbeat_timeout_ms (%d)", cl.LeaderLeaseTimeoutMS, cl.HeartbeatTimeoutMS)
	}
	if cl.ElectionTimeoutMS < cl.HeartbeatTimeoutMS {
		add("cluster.election_timeout_ms (%d) must be at least cluster.heartbeat_timeout_ms (%d)", cl.ElectionTimeoutMS, cl.HeartbeatTimeoutMS)
	}
	if cl.MaxEntryBytes < 4<<10 || cl.MaxEntryBytes > s.MaxMessageBytes {
		add("cluster.max_entry_bytes: must be 4096..server.max_message_bytes (%d), got %d", s.MaxMessageBytes, cl.MaxEntryBytes)
	}
	if cl.MaxCommandsPerEntry > 4096 {
		add("cluster.max_commands_per_entry: must be at most 4096, got %d", cl.MaxCommandsPerEntry)
	}
	ids := map[string]bool{}
	raftAddrs := map[string]bool{}
	self := false
	for i, p := range cl.Peers {
		key := fmt.Sprintf("cluster.peers[%d]", i)
		if p.ID == "" {
			add("%s.id: must be set", key)
		}
		if ids[p.ID] {
			add("%s.id: %q appears twice", key, p.ID)
		}
		ids[p.ID] = true
		if err := checkHostPort(p.RaftAddr); err != nil {
			add("%s.raft_addr: %v", key, err)
		}
		if raftAddrs[p.RaftAddr] {
			add("%s.raft_addr: %q appears twice", key, p.RaftAddr)
		}
		raftAddrs[p.RaftAddr] = true
		if err := checkHostPort(p.GRPCAddr); err != nil {
			add("%s.grpc_addr: %v", key, err)
		}
		if p.HTTPAddr != "" {
			if err := checkHostPort(p.HTTPAddr); err != nil {
				add("%s.http_addr: %v", key, err)
			}
		}
		if p.ID == s.NodeID {
			self = true
		}
	}
	if len(cl.Peers) > 0 && !self {
		add("cluster.peers: must include this node (server.node_id = %q)", s.NodeID)
	}

	if _, err := c.EngineConfig(); err != nil {
		errs = append(errs, err)
	}
	for i, u := range c.Admin.Users {
		key := fmt.Sprintf("admin.users[%d]", i)
		if u.Name == "" {
			add("%s.name: must be set", key)
		}
		if u.Role != "viewer" && u.Role != "operator" {
			add("%s.role: must be \"viewer\" or \"operator\", got %q", key, u.Role)
		}
		if u.PasswordHash == "" {
			add("%s.password_hash: must be set (see `sepp hash-password`)", key)
		}
	}
	if k := c.Admin.SessionKey; k != "" && len(k) < 32 {
		add("admin.session_key: must be at least 32 bytes, got %d", len(k))
	}
	if c.Admin.SessionTTLMS < 0 {
		add("admin.session_ttl_ms: must not be negative, got %d", c.Admin.SessionTTLMS)
	}
	if c.Admin.Auth && len(c.Admin.Users) == 0 {
		add("admin.auth: is on but admin.users is empty: nobody could sign in")
	}
	errs = append(errs, c.TLS.validate()...)
	errs = append(errs, c.Auth.validate()...)
	errs = append(errs, c.API.validate()...)
	errs = append(errs, c.Tracing.validate()...)
	return errors.Join(errs...)
}

func (t TLS) validate() []error {
	var errs []error
	if (t.CertFile == "") != (t.KeyFile == "") {
		errs = append(errs, fmt.Errorf("tls.cert_file and tls.key_file: set both or neither (cert_file %q, key_file %q)", t.CertFile, t.KeyFile))
	}
	if t.ClientCAFile != "" && t.CertFile == "" {
		errs = append(errs, fmt.Errorf("tls.client_ca_file: needs tls.cert_file and tls.key_file (mutual TLS is TLS first)"))
	}
	set := 0
	for _, v := range []string{t.RaftCertFile, t.RaftKeyFile, t.RaftCAFile} {
		if v != "" {
			set++
		}
	}
	if set != 0 && set != 3 {
		errs = append(errs, fmt.Errorf("tls.raft_cert_file, tls.raft_key_file and tls.raft_ca_file: set all three or none"))
	}
	return errs
}

func (a Auth) validate() []error {
	var errs []error
	add := func(format string, args ...any) { errs = append(errs, fmt.Errorf(format, args...)) }
	names := map[string]bool{}
	hashes := map[string]bool{}
	for i, t := range a.Tokens {
		key := fmt.Sprintf("auth.tokens[%d]", i)
		if t.Name == "" || len(t.Name) > 128 || !utf8.ValidString(t.Name) {
			add("%s.name: must be 1..128 bytes of UTF-8, got %q", key, t.Name)
		} else if names[t.Name] {
			add("%s.name: %q appears twice", key, t.Name)
		}
		names[t.Name] = true
		h := strings.ToLower(t.SHA256)
		if len(h) != 64 || strings.Trim(h, "0123456789abcdef") != "" {
			add("%s.sha256: must be 64 hex digits, the SHA-256 of the token (see `sepp hash-token`), got %d characters", key, len(t.SHA256))
		} else if hashes[h] {
			add("%s.sha256: the same token hash appears twice", key)
		}
		hashes[h] = true
		if len(t.Roles) == 0 {
			add("%s.roles: must name at least one of %s", key, strings.Join(TokenRoles, ", "))
		}
		for j, r := range t.Roles {
			ok := false
			for _, known := range TokenRoles {
				ok = ok || r == known
			}
			if !ok {
				add("%s.roles[%d]: must be one of %s, got %q", key, j, strings.Join(TokenRoles, ", "), r)
			}
		}
	}
	if a.Enabled && len(a.Tokens) == 0 {
		add("auth.enabled: is on but auth.tokens is empty: every call would be refused")
	}
	return errs
}

func (t Tracing) validate() []error {
	var errs []error
	if e := t.OTLPEndpoint; e != "" {
		u, err := url.Parse(e)
		if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Hostname() == "" || u.Port() == "" || (u.Path != "" && u.Path != "/") {
			errs = append(errs, fmt.Errorf("tracing.otlp_endpoint: must be an OTLP/gRPC collector's URL such as \"http://127.0.0.1:4317\" (http: plaintext, https: TLS; host and port), got %q", e))
		}
	}
	if t.ServiceName == "" || len(t.ServiceName) > 256 || !utf8.ValidString(t.ServiceName) {
		errs = append(errs, fmt.Errorf("tracing.service_name: must be 1..256 bytes of UTF-8, got %q", t.ServiceName))
	}
	if !(t.SampleRatio >= 0 && t.SampleRatio <= 1) {
		errs = append(errs, fmt.Errorf("tracing.sample_ratio: must be 0..1, got %v", t.SampleRatio))
	}
	return errs
}

// maxCORSOrigins bounds api.cors_allowed_origins.
const maxCORSOrigins = 256

func (a API) validate() []error {
	var errs []error
	if len(a.CORSAllowedOrigins) > maxCORSOrigins {
		errs = append(errs, fmt.Errorf("api.cors_allowed_origins: at most %d origins, got %d", maxCORSOrigins, len(a.CORSAllowedOrigins)))
	}
	seen := map[string]bool{}
	for i, o := range a.CORSAllowedOrigins {
		key := fmt.Sprintf("api.cors_allowed_origins[%d]", i)
		if err := checkOrigin(o); err != nil {
			errs = append(errs, fmt.Errorf("%s: %w", key, err))
		} else if seen[o] {
			errs = append(errs, fmt.Errorf("%s: %q appears twice", key, o))
		}
		seen[o] = true
	}
	if a.CORSAllowCredentials && len(a.CORSAllowedOrigins) == 0 {
		errs = append(errs, fmt.Errorf("api.cors_allow_credentials: is on but api.cors_allowed_origins is empty: no origin could use it"))
	}
	return errs
}

// checkOrigin accepts an origin as browsers serialize it in the Origin
// header: http or https, a lower-case host, an optional port, nothing
// else. Browsers compare origins byte for byte, so "https://App.example/"
// would never match and is refused here rather than silently unused.
func checkOrigin(o string) error {
	const form = "must be an origin such as \"https://app.example\" or \"http://localhost:3000\" (scheme, host and port only)"
	if o == "*" || strings.Contains(o, "*") {
		return fmt.Errorf("no wildcard: name each origin; %s, got %q", form, o)
	}
	u, err := url.Parse(o)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" || u.Hostname() == "" ||
		u.User != nil || u.Path != "" || u.RawQuery != "" || u.Fragment != "" || strings.HasSuffix(o, "?") || strings.HasSuffix(o, "#") {
		return fmt.Errorf("%s, got %q", form, o)
	}
	if o != strings.ToLower(o) {
		return fmt.Errorf("must be lower case, as browsers send it, got %q", o)
	}
	if p := u.Port(); p != "" {
		if n, err := strconv.Atoi(p); err != nil || n < 1 || n > 65535 {
			return fmt.Errorf("port must be 1..65535, got %q", o)
		}
		if (u.Scheme == "http" && p == "80") || (u.Scheme == "https" && p == "443") {
			return fmt.Errorf("browsers leave the default port out of an origin: write %q, got %q", u.Scheme+"://"+u.Hostname(), o)
		}
	}
	return nil
}

func checkHostPort(addr string) error {
	host, port, err := net.SplitHostPort(addr)
	if err != nil {
		return fmt.Errorf("must be host:port, got %q", addr)
	}
	if strings.ContainsAny(host, " \t") {
		return fmt.Errorf("host must not contain spaces, got %q", host)
	}
	n, err := strconv.Atoi(port)
	if err != nil || n < 0 || n > 65535 {
		return fmt.Errorf("port must be 0..65535, got %q", port)
	}
	return nil
}

func ms(v int64) time.Duration { return time.Duration(v) * time.Millisecond }

func backoffName(b engine.Backoff) string {
	if b == engine.BackoffExponential {
		return "exponential"
	}
	return "none"
}

func parseBackoff(key, v string) (engine.Backoff, error) {
	switch v {
	case "none":
		return engine.BackoffNone, nil
	case "exponential":
		return engine.BackoffExponential, nil
	}
	return 0, fmt.Errorf("%s: must be \"none\" or \"exponential\", got %q", key, v)
}

// EngineConfig converts [limits], [storage] and [[queues]] into the engine's
// replicated Config and validates it there.
func (c Config) EngineConfig() (engine.Config, error) {
	l := c.Limits
	backoff, err := parseBackoff("limits.retry_backoff", l.RetryBackoff)
	if err != nil {
		return engine.Config{}, err
	}
	out := engine.Config{Limits: engine.Limits{
		DefaultPriority:      l.DefaultPriority,
		DefaultMaxAttempts:   l.DefaultMaxAttempts,
		MaxAttemptsCeiling:   l.MaxAttemptsCeiling,
		RetryDelay:           ms(l.RetryDelayMS),
		RetryBackoff:         backoff,
		RetryDelayMax:        ms(l.RetryDelayMaxMS),
		MaxScheduleHorizon:   ms(l.MaxScheduleHorizonMS),
		MaxReserveBatch:      l.MaxReserveBatch,
		DefaultLease:         ms(l.DefaultLeaseMS),
		MaxLease:             ms(l.MaxLeaseMS),
		MaxPayloadBytes:      l.MaxPayloadBytes,
		MaxBatchSize:         l.MaxBatchSize,
		MaxCustomFields:      l.MaxCustomFields,
		MaxCustomFieldBytes:  l.MaxCustomFieldBytes,
		MaxJobTypeBytes:      l.MaxJobTypeBytes,
		IdempotencyWindow:    ms(l.IdempotencyWindowMS),
		MaxIdempotencyKeys:   l.MaxIdempotencyKeys,
		IdempotencyMinWindow: ms(l.IdempotencyMinWindowMS),
		MaxQueueLength:       l.MaxQueueLength,
		MaxMemoryBytes:       l.MaxMemoryBytes,
		MaxDiskBytes:         l.MaxDiskBytes,
		MaxDeadLetters:       l.MaxDeadLetters,
		AttemptHistory:       l.AttemptHistory,
		DeadLetterRetention:  ms(c.Storage.DeadLetterRetentionMS),
		Strict:               l.Strict,
	}}
	for i, q := range c.Queues {
		qc := engine.QueueConfig{
			Name:               q.Name,
			DefaultPriority:    q.DefaultPriority,
			DefaultMaxAttempts: q.DefaultMaxAttempts,
			MaxLength:          q.MaxLength,
			MaxMemoryBytes:     q.MaxMemoryBytes,
			DeadLetterQueue:    q.DeadLetterQueue,
			MaxReserved:        q.MaxReserved,
			RateLimit:          q.RateLimit,
			RatePeriod:         ms(q.RatePeriodMS),
			RateBurst:          q.RateBurst,
			ConcurrencyKey:     q.ConcurrencyKey,
			MaxPerKey:          q.MaxPerKey,
			MaxWait:            ms(q.MaxWaitMS),
			FairnessKey:        q.FairnessKey,
			Tags:               engine.TagsFromMap(q.Tags), // sorted: the file's order is not kept
			CompletedRetention: ms(q.CompletedRetentionMS),
		}
		if q.RetryDelayMS != nil {
			d := ms(*q.RetryDelayMS)
			qc.RetryDelay = &d
		}
		if q.RetryDelayMaxMS != nil {
			d := ms(*q.RetryDelayMaxMS)
			qc.RetryDelayMax = &d
		}
		if q.MaxScheduleHorizonMS != nil {
			d := ms(*q.MaxScheduleHorizonMS)
			qc.MaxScheduleHorizon = &d
		}
		if q.RetryBackoff != nil {
			b, err := parseBackoff(fmt.Sprintf("queues[%d].retry_backoff", i), *q.RetryBackoff)
			if err != nil {
				return engine.Config{}, err
			}
			qc.RetryBackoff = &b
		}
		out.Queues = append(out.Queues, qc)
	}
	if err := out.Validate(); err != nil {
		return engine.Config{}, err
	}
	return out, nil
}

// Source is the path the config was loaded from ("" for Default or Parse).
func (c Config) Source() string { return c.source }

// DefaultMaxMemoryShare is limits.max_memory_share's default.
const DefaultMaxMemoryShare = 0.33

// MemoryShare is limits.max_memory_share, its default when unset.
func (l Limits) MemoryShare() float64 {
	if l.MaxMemoryShare == nil {
		return DefaultMaxMemoryShare
	}
	return *l.MaxMemoryShare
}

// MemoryBudget is the budget of held bytes a node running in a memory
// limit of limit bytes (0: unknown) proposes: limits.max_memory_bytes when
// set, else max_memory_share of limit, else 0 (unbounded). from says which.
func (l Limits) MemoryBudget(limit int64) (budget int64, from string) {
	switch share := l.MemoryShare(); {
	case l.MaxMemoryBytes > 0:
		return l.MaxMemoryBytes, "limits.max_memory_bytes"
	case share <= 0:
		return 0, "limits.max_memory_share = 0 (unbounded)"
	case limit <= 0:
		return 0, "no memory limit known (unbounded)"
	default:
		return int64(float64(limit) * share), fmt.Sprintf("limits.max_memory_share %.2f of the node's memory limit", share)
	}
}
