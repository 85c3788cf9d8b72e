package rpc

import (
	"time"
	"unicode"
	"unicode/utf8"

	"google.golang.org/protobuf/types/known/durationpb"

	"github.com/sepp-io/sepp/apiconv"
	"github.com/sepp-io/sepp/engine"
	seppv1 "github.com/sepp-io/sepp/proto/sepp/v1"
)

// Limits the rpc layer enforces itself, on fields the engine never sees. The
// engine checks everything it is handed (queue names, worker and request
// ids, idempotency keys, payload and custom sizes, priority) and is the one
// source of those limits and their messages.
const (
	// MaxNameBytes bounds node ids and addresses of ClusterService.
	MaxNameBytes = 255
	// MaxReasonBytes bounds a nack or dead-letter reason. A longer reason is
	// cut at a rune boundary rather than rejected: refusing a nack over its
	// free-text note would leave the job leased until its lease expires.
	// (The engine cuts the same way; cutting here keeps the log entry small.)
	MaxReasonBytes = 4096
	// MaxIDsPerAction bounds the job ids of one operator action.
	MaxIDsPerAction = 1000
)

// All validation errors are *fieldError values: InvalidArgument naming the
// field and the limit. Invalid UTF-8 never reaches these functions: the codec
// (codec.go) catches it while decoding and names the field.

func validateName(field, v string, required bool) error {
	if v == "" {
		if required {
			return invalidField(field, "1.."+itoa(MaxNameBytes)+" bytes", "is required (1 to %d bytes)", MaxNameBytes)
		}
		return nil
	}
	if len(v) > MaxNameBytes {
		return invalidField(field, "max "+itoa(MaxNameBytes)+" bytes", "must be at most %d bytes, got %d", MaxNameBytes, len(v))
	}
	for i, r := range v {
		if unicode.IsControl(r) {
			return invalidField(field, "no control characters", "must not contain control characters (found %U at byte %d)", r, i)
		}
	}
	return nil
}

// validateDuration reads an optional, non-negative duration; nil is 0.
func validateDuration(field string, d *durationpb.Duration) (time.Duration, error) {
	if d == nil {
		return 0, nil
	}
	if err := d.CheckValid(); err != nil {
		return 0, invalidField(field, "", "is not a valid duration: %v", err)
	}
	if d.GetSeconds() < 0 || d.GetNanos() < 0 {
		return 0, invalidField(field, ">= 0", "must be >= 0, got %s", d.AsDuration())
	}
	return d.AsDuration(), nil
}

// leaseRef reads the fencing pair of a JobContext.
func leaseRef(ctx *seppv1.JobContext) (engine.LeaseRef, error) {
	if ctx == nil {
		return engine.LeaseRef{}, invalidField("ctx", "", "is required: pass back the ctx of the reserved job")
	}
	if ctx.GetJobId() == 0 {
		return engine.LeaseRef{}, invalidField("ctx.job_id", "> 0", "is required (> 0)")
	}
	if ctx.GetLeaseToken() == 0 {
		return engine.LeaseRef{}, invalidField("ctx.lease_token", "> 0", "is required (> 0)")
	}
	return engine.LeaseRef{JobID: engine.JobID(ctx.GetJobId()), LeaseToken: engine.LeaseToken(ctx.GetLeaseToken())}, nil
}

func enqueueParams(prefix string, r *seppv1.EnqueueRequest) (engine.EnqueueParams, error) {
	var p engine.EnqueueParams
	err := fillEnqueueParams(&p, prefix, r)
	return p, err
}

// fillEnqueueParams sets *p (a zero value) from r; on error it leaves *p
// as it was. The params share r's memory (payload, custom, priority): the
// backend copies what it keeps. The conversion is apiconv's, which the
// state machine also applies an ack's follow-ups with (command version
// 24): one converter for both paths.
func fillEnqueueParams(p *engine.EnqueueParams, prefix string, r *seppv1.EnqueueRequest) error {
	return apiconv.FillEnqueueParams(p, prefix, r)
}

func jobIDs(field string, ids []uint64) ([]engine.JobID, error) {
	if len(ids) == 0 {
		return nil, invalidField(field, "1.."+itoa(MaxIDsPerAction), "needs at least one job id")
	}
	if len(ids) > MaxIDsPerAction {
		return nil, invalidField(field, "max "+itoa(MaxIDsPerAction), "has %d ids; at most %d per call", len(ids), MaxIDsPerAction)
	}
	out := make([]engine.JobID, len(ids))
	for i, id := range ids {
		if id == 0 {
			return nil, invalidField(field+"["+itoa(i)+"]", "> 0", "job id must be > 0")
		}
		out[i] = engine.JobID(id)
	}
	return out, nil
}

// truncateReason cuts a reason to MaxReasonBytes at a rune boundary.
func truncateReason(s string) string {
	if len(s) <= MaxReasonBytes {
		return s
	}
	cut := MaxReasonBytes
	for cut > 0 && !utf8.RuneStart(s[cut]) {
		cut--
	}
	return s[:cut]
}
