package engine_test

import (
	"errors"
	"strings"
	"testing"

	"github.com/sepp-io/sepp/engine"
	et "github.com/sepp-io/sepp/engine/enginetest"
)

// TestAckWithFollowUps covers the ack and its follow-ups as one
// transition: the follow-ups enqueued in order with their results, or,
// when the lease is stale or any follow-up is refused, nothing at all
// (the state's digest unchanged, the job still reserved under its lease).
func TestAckWithFollowUps(t *testing.T) {
	t.Parallel()
	keyed := func(queue, key string) engine.EnqueueParams {
		p := et.Job(queue)
		p.IdempotencyKey = key
		return p
	}
	unique := func(queue, key string, refuse bool) engine.EnqueueParams {
		p := et.Job(queue)
		p.Unique = &engine.UniqueOpts{Key: key, Refuse: refuse}
		return p
	}
	tests := []struct {
		name string
		// setup runs before the job "w" is enqueued and reserved.
		setup     func(t *testing.T, e *engine.Engine)
		staleRef  bool
		followUps []engine.EnqueueParams
		// want: the follow-ups' results (ids relative to the first id
		// after the acked job; dup ids absolute when absolute is set).
		want    []engine.EnqueueResult
		wantErr error
		// wantField: the field the error names.
		wantField string
	}{
		{
			name:      "NoFollowUpsIsAPlainAck",
			followUps: nil,
			want:      nil,
		},
		{
			name:      "FollowUpsEnqueuedInOrder",
			followUps: []engine.EnqueueParams{et.Job("next"), et.Job("other"), et.Job("next")},
			want:      []engine.EnqueueResult{{JobID: 1, State: engine.StateReady}, {JobID: 2, State: engine.StateReady}, {JobID: 3, State: engine.StateReady}},
		},
		{
			name:      "StaleLeaseEnqueuesNothing",
			staleRef:  true,
			followUps: []engine.EnqueueParams{et.Job("next")},
			wantErr:   engine.ErrLeaseLost,
		},
		{
			name:      "OneBadFollowUpRefusesAll",
			followUps: []engine.EnqueueParams{et.Job("next"), {Queue: "next"}},
			wantErr:   engine.ErrInvalidArgument,
			wantField: "follow_ups[1].job_type",
		},
		{
			name: "FullQueueRefusesAll",
			setup: func(t *testing.T, e *engine.Engine) {
				t.Helper()
				if err := e.CreateQueue(e.Now(), engine.QueueConfig{Name: "small", MaxLength: et.Ptr(1)}, false); err != nil {
					t.Fatal(err)
				}
			},
			// The first fits, the second would not once the first is in.
			followUps: []engine.EnqueueParams{et.Job("next"), et.Job("small"), et.Job("small")},
			wantErr:   engine.ErrQueueFull,
			wantField: "follow_ups[2].queue",
		},
		{
			name: "MemoryBudgetRefusesAll",
			setup: func(t *testing.T, e *engine.Engine) {
				t.Helper()
				if err := e.CreateQueue(e.Now(), engine.QueueConfig{Name: "tight", MaxMemoryBytes: et.Ptr[int64](2000)}, false); err != nil {
					t.Fatal(err)
				}
			},
			followUps: []engine.EnqueueParams{
				{Queue: "tight", JobType: "t", Payload: make([]byte, 900)},
				{Queue: "tight", JobType: "t", Payload: make([]byte, 900)},
				{Queue: "tight", JobType: "t", Payload: make([]byte, 900)},
			},
			wantErr: engine.ErrMemoryFull,
		},
		{
			name:      "RefusingUniqueKeyOfAnEarlierFollowUpRefusesAll",
			followUps: []engine.EnqueueParams{unique("next", "u", false), unique("next", "u", true)},
			wantErr:   engine.ErrAlreadyExists,
		},
		{
			name:      "UniqueKeyOfAnEarlierFollowUpIsItsDuplicate",
			followUps: []engine.EnqueueParams{unique("next", "u", false), unique("next", "u", false)},
			want:      []engine.EnqueueResult{{JobID: 1, State: engine.StateReady}, {JobID: 1, State: engine.StateReady, Duplicate: true}},
		},
		{
			name:      "IdempotencyKeyOfAnEarlierFollowUpIsItsDuplicate",
			followUps: []engine.EnqueueParams{keyed("next", "k"), keyed("next", "k"), keyed("other", "k")},
			want:      []engine.EnqueueResult{{JobID: 1, State: engine.StateReady}, {JobID: 1, State: engine.StateReady, Duplicate: true}, {JobID: 2, State: engine.StateReady}},
		},
		{
			name: "StrictUnknownQueueRefusesAll",
			setup: func(t *testing.T, e *engine.Engine) {
				t.Helper()
				lim := e.Config()
				lim.Limits.Strict = true
				lim.Queues = append(lim.Queues, engine.QueueConfig{Name: "w"})
				if err := e.SetConfig(e.Now(), lim); err != nil {
					t.Fatal(err)
				}
			},
			followUps: []engine.EnqueueParams{et.Job("w"), et.Job("nowhere")},
			wantErr:   engine.ErrUnknownQueue,
			wantField: "follow_ups[1].queue",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			clock := et.NewClock()
			e := et.New(t)
			if tt.setup != nil {
				tt.setup(t, e)
			}
			id := et.MustEnqueue(t, e, clock.Now(), et.Job("w"))
			d := et.MustReserveOne(t, e, clock.Now(), "w")
			ref := et.Ref(d)
			if tt.staleRef {
				ref.LeaseToken++
			}
			before := e.Digest()
			got, err := e.AckWithFollowUps(clock.Now(), ref, nil, tt.followUps)
			et.RequireInvariants(t, e)
			if tt.wantErr != nil {
				if !errors.Is(err, tt.wantErr) {
					t.Fatalf("err = %v, want %v", err, tt.wantErr)
				}
				var fe *engine.FieldError
				if tt.wantField != "" && (!errors.As(err, &fe) || fe.Field != tt.wantField) {
					t.Fatalf("err = %v, want it to name %s", err, tt.wantField)
				}
				if !strings.Contains(err.Error(), "follow_ups[") && !tt.staleRef {
					t.Fatalf("err = %v names no follow-up", err)
				}
				if got != nil {
					t.Fatalf("results %+v with an error", got)
				}
				if e.Digest() != before {
					t.Fatal("a refused ack changed the state")
				}
				if j := mustGetJob(t, e, id); j.State != engine.StateReserved {
					t.Fatalf("job %d is %v after a refused ack, want reserved", id, j.State)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if len(got) != len(tt.want) {
				t.Fatalf("results %+v, want %+v", got, tt.want)
			}
			for i, w := range tt.want {
				w.JobID += id
				if got[i] != w {
					t.Fatalf("result %d = %+v, want %+v", i, got[i], w)
				}
				if j := mustGetJob(t, e, got[i].JobID); j.Queue != tt.followUps[i].Queue && !w.Duplicate {
					t.Fatalf("follow-up %d in queue %q", i, j.Queue)
				}
			}
			if _, err := e.GetJob(id); !errors.Is(err, engine.ErrNotFound) {
				t.Fatalf("acked job: %v, want gone", err)
			}
		})
	}
}

// TestAckWithFollowUps_Retry: a retried ack whose first answer was lost
// finds the lease gone and enqueues nothing more, and the follow-ups'
// idempotency keys make enqueueing them again on their own a duplicate.
func TestAckWithFollowUps_Retry(t *testing.T) {
	t.Parallel()
	clock := et.NewClock()
	e := et.New(t)
	et.MustEnqueue(t, e, clock.Now(), et.Job("w"))
	d := et.MustReserveOne(t, e, clock.Now(), "w")
	fu := et.Job("next")
	fu.IdempotencyKey = "step-2"
	first, err := e.AckWithFollowUps(clock.Now(), et.Ref(d), nil, []engine.EnqueueParams{fu})
	if err != nil {
		t.Fatal(err)
	}
	before := e.Digest()
	if _, err := e.AckWithFollowUps(clock.Now(), et.Ref(d), nil, []engine.EnqueueParams{fu}); !errors.Is(err, engine.ErrLeaseLost) {
		t.Fatalf("retried ack: %v, want ErrLeaseLost", err)
	}
	if e.Digest() != before {
		t.Fatal("the retried ack changed the state")
	}
	again, err := e.Enqueue(clock.Now(), fu)
	if err != nil {
		t.Fatal(err)
	}
	if !again.Duplicate || again.JobID != first[0].JobID {
		t.Fatalf("enqueue of the follow-up again: %+v, want a duplicate of %d", again, first[0].JobID)
	}
}

// TestAckWithFollowUps_Bounds: more follow-ups than limits.max_batch_size
// is InvalidArgument naming follow_ups and the limit, checked before the
// lease.
func TestAckWithFollowUps_Bounds(t *testing.T) {
	t.Parallel()
	clock := et.NewClock()
	e := et.New(t, func(c *engine.Config) { c.Limits.MaxBatchSize = 2 })
	et.MustEnqueue(t, e, clock.Now(), et.Job("w"))
	d := et.MustReserveOne(t, e, clock.Now(), "w")
	_, err := e.AckWithFollowUps(clock.Now(), et.Ref(d), nil, []engine.EnqueueParams{et.Job("a"), et.Job("a"), et.Job("a")})
	var fe *engine.FieldError
	if !errors.As(err, &fe) || fe.Field != "follow_ups" || !strings.Contains(fe.Limit, "max_batch_size") {
		t.Fatalf("err = %v, want follow_ups over max_batch_size", err)
	}
	if _, err := e.AckWithFollowUps(clock.Now(), et.Ref(d), nil, []engine.EnqueueParams{et.Job("a"), et.Job("a")}); err != nil {
		t.Fatal(err)
	}
}
