package apiconv

import (
	"errors"
	"strconv"

	"github.com/sepp-io/sepp/engine"
	seppv1 "github.com/sepp-io/sepp/proto/sepp/v1"
)

// Progress is a job's progress as the engine keeps it, from the public
// message an ExtendLeaseRequest carries and the log's LeaseExtend holds
// (fsm.CommandVersionProgress); nil for nil (no report). A rejected value is an
// *engine.FieldError naming progress.percent (limit "0..100") or
// progress.message (limit "at most 256 bytes of UTF-8"), the engine's
// bounds (engine.CheckProgress), which the engine checks again at apply.
func Progress(p *seppv1.Progress) (*engine.Progress, error) {
	if p == nil {
		return nil, nil
	}
	out := &engine.Progress{Percent: p.GetPercent(), Message: p.GetMessage()}
	err := engine.CheckProgress(out)
	var fe *engine.FieldError
	if !errors.As(err, &fe) {
		return out, err
	}
	limit := "0.." + strconv.Itoa(engine.MaxProgressPercent)
	if fe.Field == "progress.message" {
		limit = "at most " + strconv.Itoa(engine.MaxProgressMessageBytes) + " bytes of UTF-8"
	}
	return nil, invalid(fe.Field, limit, "%s", fe.Reason)
}

// ProgressToProto is the public form of a job's progress; nil for nil.
func ProgressToProto(p *engine.Progress) *seppv1.Progress {
	if p == nil {
		return nil
	}
	return &seppv1.Progress{Percent: p.Percent, Message: p.Message}
}
