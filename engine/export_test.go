package engine

// HoldEveryJobFull makes e keep every job as a *job, never compact
// (compact.go): a twin for tests that compare the two forms op by op. A
// Restore into e turns it off again.
func HoldEveryJobFull(e *Engine) { e.compactOff = true }

// CompactJobs is how many jobs e holds compact.
func CompactJobs(e *Engine) int { return e.nCompact }

// The snapshot layouts the progress tests name: kept here, not written out
// in the tests, so that renumbering a layout moves one constant.
const (
	SnapshotVersionProgress = snapshotVersionProgress
	// SnapshotVersionDependencies is the layout of jobs' parents.
	SnapshotVersionDependencies = snapshotVersionDependencies
	SnapshotVersionCompleted    = snapshotVersionCompleted
	// SnapshotVersionProto is the protobuf form.
	SnapshotVersionProto = snapshotVersionProto
)
