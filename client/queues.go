package client

import (
	"context"
	"fmt"

	seppv1 "github.com/sepp-io/sepp/proto/sepp/v1"
)

// Queues as managed objects: create, read, update, delete and purge queues
// while the cluster runs. The settings live in the replicated state, so
// every node runs them and a restart keeps them.

// QueueSettings, with its conversions to and from the wire, is generated
// from sepp.v1.QueueSettings into queue_settings_gen.go (make generate;
// tools/protoc-gen-sepp-sdk has the rules).

// QueueInfo is one queue: its counts, its own settings and what it runs
// with (Effective, its settings over the global limits).
type QueueInfo struct {
	Stats     QueueStats
	Settings  QueueSettings
	Effective QueueSettings // every field set
}

// QueueUpdate changes a queue: the set fields of Settings replace the
// queue's own, Inherit drops settings by name (default_priority,
// retry_delay_ms, max_reserved, ...) so the queue takes the global value
// again (a reserve limit: none), Paused pauses or resumes it.
type QueueUpdate struct {
	Settings QueueSettings
	Inherit  []string
	Paused   *bool
}

// QueueRemoval counts what a delete or purge removed.
type QueueRemoval struct {
	Jobs        uint64
	DeadLetters uint64
}

// PurgeTarget says what PurgeQueue removes.
type PurgeTarget int

const (
	// PurgeWaiting removes Ready and Scheduled jobs; reserved ones stay.
	PurgeWaiting PurgeTarget = iota + 1
	// PurgeDeadLetters removes the queue's retained dead letters.
	PurgeDeadLetters
)

// CreateQueue adds a queue (AlreadyExists when it is configured already)
// and returns its effective settings. It is not retried once it may have
// been applied: a retry would answer AlreadyExists.
func (c *Client) CreateQueue(ctx context.Context, name string, s QueueSettings, paused bool) (QueueSettings, error) {
	ps, err := queueSettingsToProto(s)
	if err != nil {
		return QueueSettings{}, err
	}
	var out QueueSettings
	err = c.call(ctx, "create queue", retryNotSent, 0, func(ctx context.Context, a *attempt) error {
		resp, err := seppv1.NewAdminServiceClient(a.cc).CreateQueue(ctx, &seppv1.CreateQueueRequest{Name: name, Settings: ps, Paused: paused}, c.opts.callOptions...)
		if err != nil {
			return err
		}
		out = queueLimitsFromProto(resp.GetEffective())
		return nil
	})
	return out, err
}

// GetQueue returns one queue (NotFound when it does not exist).
func (c *Client) GetQueue(ctx context.Context, name string, stale bool) (*QueueInfo, error) {
	var out *QueueInfo
	err := c.call(ctx, "get queue", retrySafe, 0, func(ctx context.Context, a *attempt) error {
		resp, err := seppv1.NewAdminServiceClient(a.cc).GetQueue(ctx, &seppv1.GetQueueRequest{Name: name, AllowStale: stale}, c.opts.callOptions...)
		if err != nil {
			return err
		}
		out = &QueueInfo{
			Stats:     queueStatsFromProto(resp.GetSummary()),
			Settings:  queueSettingsFromProto(resp.GetSettings()),
			Effective: queueLimitsFromProto(resp.GetEffective()),
		}
		return nil
	})
	return out, err
}

// UpdateQueue changes a queue and returns its effective settings. It is
// idempotent, so it is retried like a read.
func (c *Client) UpdateQueue(ctx context.Context, name string, u QueueUpdate) (QueueSettings, error) {
	ps, err := queueSettingsToProto(u.Settings)
	if err != nil {
		return QueueSettings{}, err
	}
	var out QueueSettings
	err = c.call(ctx, "update queue", retrySafe, 0, func(ctx context.Context, a *attempt) error {
		resp, err := seppv1.NewAdminServiceClient(a.cc).UpdateQueue(ctx, &seppv1.UpdateQueueRequest{Name: name, Settings: ps, Inherit: u.Inherit, Paused: u.Paused}, c.opts.callOptions...)
		if err != nil {
			return err
		}
		out = queueLimitsFromProto(resp.GetEffective())
		return nil
	})
	return out, err
}

// DeleteQueue removes a queue; one holding jobs or dead letters is refused
// (FailedPrecondition) unless force is set, and a forced delete counts
// what it removed. Not retried once it may have been applied.
func (c *Client) DeleteQueue(ctx context.Context, name string, force bool) (QueueRemoval, error) {
	var out QueueRemoval
	err := c.call(ctx, "delete queue", retryNotSent, 0, func(ctx context.Context, a *attempt) error {
		resp, err := seppv1.NewAdminServiceClient(a.cc).DeleteQueue(ctx, &seppv1.DeleteQueueRequest{Name: name, Force: force}, c.opts.callOptions...)
		if err != nil {
			return err
		}
		out = QueueRemoval{Jobs: resp.GetJobsRemoved(), DeadLetters: resp.GetDeadLettersRemoved()}
		return nil
	})
	return out, err
}

// PurgeQueue removes a queue's waiting jobs or dead letters and counts
// them. Not retried once it may have been applied.
func (c *Client) PurgeQueue(ctx context.Context, name string, target PurgeTarget) (QueueRemoval, error) {
	var pt seppv1.PurgeTarget
	switch target {
	case PurgeWaiting:
		pt = seppv1.PurgeTarget_PURGE_TARGET_WAITING
	case PurgeDeadLetters:
		pt = seppv1.PurgeTarget_PURGE_TARGET_DEAD_LETTERS
	default:
		return QueueRemoval{}, fmt.Errorf("sepp: purge target must be PurgeWaiting or PurgeDeadLetters, got %d", target)
	}
	var out QueueRemoval
	err := c.call(ctx, "purge queue", retryNotSent, 0, func(ctx context.Context, a *attempt) error {
		resp, err := seppv1.NewAdminServiceClient(a.cc).PurgeQueue(ctx, &seppv1.PurgeQueueRequest{Name: name, Target: pt}, c.opts.callOptions...)
		if err != nil {
			return err
		}
		out = QueueRemoval{Jobs: resp.GetJobsRemoved(), DeadLetters: resp.GetDeadLettersRemoved()}
		return nil
	})
	return out, err
}
