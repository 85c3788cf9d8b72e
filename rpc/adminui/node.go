package adminui

import (
	"net/http"
	"runtime"
	"slices"
	"strings"
	"time"

	"github.com/sepp-io/sepp/cluster"
	"github.com/sepp-io/sepp/engine"
)

// FollowerLagger is what a Backend may also offer for the node page: on
// the leader, how many log entries each follower's replicated log trails
// the leader's last index (by its match index). cluster.Node implements it;
// a Backend without it shows no per-follower lag.
type FollowerLagger interface {
	FollowerLag() map[string]uint64
}

type followerLag struct {
	ID      string
	Entries uint64
}

type nodeView struct {
	Version   string
	StartedAt time.Time
	Uptime    time.Duration
	Status    cluster.Status
	Err       string
	// ApplyLag is how many committed entries this node has not applied yet.
	ApplyLag uint64
	Memory   engine.MemoryUse
	Disk     diskUse
	Go       goMemory
	Lag      []followerLag
	LagKnown bool // this node leads and the backend reports lag
}

type goMemory struct {
	HeapAlloc, HeapSys, Sys int64
	NumGC                   uint32
	Goroutines              int
	GOMAXPROCS              int
}

// diskUse is the payloads' side of the budgets: the payload bytes the
// jobs and dead letters hold (the same on every replica), the disk budget
// (limits.max_disk_bytes, counted once payloads are off the heap) and the
// space this node's payload store takes on its disk, with what its
// snapshots' checkpoints hold beyond that.
type diskUse struct {
	Held, Limit           int64
	OffHeap               bool
	StoreBytes            int64
	CheckpointPinnedBytes int64
}

func (d diskUse) Percent() int {
	if d.Limit <= 0 {
		return 0
	}
	return int(d.Held * 100 / d.Limit)
}

func (v nodeView) MemoryPercent() int {
	if v.Memory.Limit <= 0 {
		return 0
	}
	return int(v.Memory.Held * 100 / v.Memory.Limit)
}

func (h *handler) nodePage(w http.ResponseWriter, r *http.Request, q *request) {
	v := nodeView{Version: h.version, StartedAt: h.started}
	if v.Version == "" {
		v.Version = "unknown"
	}
	if !h.started.IsZero() {
		v.Uptime = h.clock().Sub(h.started).Truncate(time.Second)
	}
	st, err := h.backend.Status(r.Context())
	v.Status = st
	if err != nil {
		v.Err = err.Error()
	}
	if st.CommitIndex > st.AppliedIndex {
		v.ApplyLag = st.CommitIndex - st.AppliedIndex
	}
	// The node's own applied state: memory is per replica.
	_ = h.backend.Read(r.Context(), true, func(e engine.View) error {
		v.Memory = e.MemoryHeld()
		v.Disk = diskUse{Held: e.DiskHeld(), Limit: e.Config().Limits.MaxDiskBytes, OffHeap: e.PayloadsOffHeap()}
		return nil
	})
	v.Disk.StoreBytes = int64(st.PayloadStoreBytes)                        //nolint:gosec // a file size, far below 2^63
	v.Disk.CheckpointPinnedBytes = int64(st.SnapshotCheckpointPinnedBytes) //nolint:gosec // file sizes, far below 2^63
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	v.Go = goMemory{HeapAlloc: int64(ms.HeapAlloc), HeapSys: int64(ms.HeapSys), Sys: int64(ms.Sys), //nolint:gosec // far below 2^63
		NumGC:      ms.NumGC,
		Goroutines: runtime.NumGoroutine(), GOMAXPROCS: runtime.GOMAXPROCS(0)}
	if fl, ok := h.backend.(FollowerLagger); ok && st.State == "Leader" {
		v.LagKnown = true
		for id, n := range fl.FollowerLag() {
			v.Lag = append(v.Lag, followerLag{ID: id, Entries: n})
		}
		slices.SortFunc(v.Lag, func(a, b followerLag) int { return strings.Compare(a.ID, b.ID) })
	}
	h.render(w, r, q, http.StatusOK, "node", "Node "+st.Self.ID, "node", v)
}
