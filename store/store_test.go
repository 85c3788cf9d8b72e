package store

import (
	"archive/tar"
	"bytes"
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/cockroachdb/pebble/v2"
	"github.com/cockroachdb/pebble/v2/vfs"
	"google.golang.org/protobuf/proto"

	storepb "github.com/sepp-io/sepp/proto/seppstore/v1"
)

func openMem(t testing.TB) (*Store, Options) {
	t.Helper()
	o := Options{FS: vfs.NewMem()}
	s, err := Open("db", o)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = s.Close() })
	return s, o
}

func body(queue string, n int) *storepb.JobBody {
	return &storepb.JobBody{
		Queue:              queue,
		JobType:            "email",
		Payload:            []byte(fmt.Sprintf("payload %d", n)),
		Custom:             map[string]string{"b": "2", "a": "1"},
		EnqueuedAtUnixNano: int64(n),
	}
}

func commit(t testing.TB, s *Store, index uint64, fill func(b *Batch)) {
	t.Helper()
	b := s.NewBatch()
	fill(b)
	if err := b.Commit(index, 1); err != nil {
		t.Fatalf("commit %d: %v", index, err)
	}
}

func TestBatch_Records(t *testing.T) {
	t.Parallel()
	type want struct {
		jobs     map[uint64]bool // id -> body present
		progress map[uint64]string
		dead     map[string][]uint64 // queue -> ids in order
	}
	tests := []struct {
		name    string
		entries []func(b *Batch)
		want    want
	}{
		{
			name:    "PutJobIsReadBack",
			entries: []func(b *Batch){func(b *Batch) { b.PutJob(1, body("q", 1)); b.PutJob(2, body("q", 2)) }},
			want:    want{jobs: map[uint64]bool{1: true, 2: true, 3: false}},
		},
		{
			name: "AckDeletesBodyAndProgress",
			entries: []func(b *Batch){
				func(b *Batch) { b.PutJob(1, body("q", 1)) },
				func(b *Batch) { b.PutProgress(1, &storepb.JobProgress{LastReason: "boom"}) },
				func(b *Batch) { b.DeleteJob(1); b.DeleteProgress(1) },
			},
			want: want{jobs: map[uint64]bool{1: false}, progress: map[uint64]string{1: ""}},
		},
		{
			name: "ProgressIsOverwritten",
			entries: []func(b *Batch){
				func(b *Batch) { b.PutJob(1, body("q", 1)); b.PutProgress(1, &storepb.JobProgress{LastReason: "first"}) },
				func(b *Batch) { b.PutProgress(1, &storepb.JobProgress{LastReason: "second"}) },
			},
			want: want{jobs: map[uint64]bool{1: true}, progress: map[uint64]string{1: "second"}},
		},
		{
			name: "DeadLetterMovesTheJob",
			entries: []func(b *Batch){
				func(b *Batch) { b.PutJob(7, body("q", 7)) },
				func(b *Batch) {
					b.DeleteJob(7)
					b.PutDeadLetter("q", 7, &storepb.DeadLetter{Body: body("q", 7), Cause: storepb.Cause_CAUSE_REJECTED})
				},
			},
			want: want{jobs: map[uint64]bool{7: false}, dead: map[string][]uint64{"q": {7}}},
		},
		{
			name: "QueuesSharingAPrefixStayApart",
			entries: []func(b *Batch){func(b *Batch) {
				b.PutDeadLetter("a", 3, &storepb.DeadLetter{})
				b.PutDeadLetter("ab", 1, &storepb.DeadLetter{})
				b.PutDeadLetter("a", 2, &storepb.DeadLetter{})
			}},
			want: want{dead: map[string][]uint64{"a": {2, 3}, "ab": {1}, "b": nil}},
		},
		{
			name: "RedriveWritesTheIDAgainAfterItsDelete",
			entries: []func(b *Batch){
				func(b *Batch) { b.PutDeadLetter("q", 5, &storepb.DeadLetter{}) },
				func(b *Batch) { b.DeleteDeadLetter("q", 5); b.PutJob(5, body("q", 5)) },
				func(b *Batch) { b.DeleteJob(5); b.PutDeadLetter("q", 5, &storepb.DeadLetter{}) },
			},
			want: want{jobs: map[uint64]bool{5: false}, dead: map[string][]uint64{"q": {5}}},
		},
		{
			name: "RangeDeleteDrainsOneQueue",
			entries: []func(b *Batch){
				func(b *Batch) {
					for id := uint64(1); id <= 10; id++ {
						b.PutDeadLetter("q", id, &storepb.DeadLetter{})
					}
					b.PutDeadLetter("r", 4, &storepb.DeadLetter{})
				},
				func(b *Batch) { b.DeleteDeadLetters("q", 2, 9) },
			},
			want: want{dead: map[string][]uint64{"q": {1, 9, 10}, "r": {4}}},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			s, _ := openMem(t)
			for i, fill := range tt.entries {
				commit(t, s, uint64(i+1), fill)
			}
			if got := s.AppliedIndex(); got != uint64(len(tt.entries)) {
				t.Errorf("AppliedIndex = %d, want %d", got, len(tt.entries))
			}
			for id, present := range tt.want.jobs {
				b, err := s.Job(id)
				switch {
				case present && err != nil:
					t.Errorf("Job(%d): %v", id, err)
				case present && !proto.Equal(b, body("q", int(id))):
					t.Errorf("Job(%d) = %v", id, b)
				case !present && !errors.Is(err, ErrNotFound):
					t.Errorf("Job(%d) err = %v, want ErrNotFound", id, err)
				}
			}
			for id, reason := range tt.want.progress {
				p, err := s.Progress(id)
				if reason == "" {
					if !errors.Is(err, ErrNotFound) {
						t.Errorf("Progress(%d) err = %v, want ErrNotFound", id, err)
					}
					continue
				}
				if err != nil || p.GetLastReason() != reason {
					t.Errorf("Progress(%d) = %v, %v; want reason %q", id, p, err, reason)
				}
			}
			for q, ids := range tt.want.dead {
				var got []uint64
				if err := s.DeadLetters(q, 0, 0, func(id uint64, _ *storepb.DeadLetter) bool { got = append(got, id); return true }); err != nil {
					t.Fatal(err)
				}
				if fmt.Sprint(got) != fmt.Sprint(ids) {
					t.Errorf("DeadLetters(%q) = %v, want %v", q, got, ids)
				}
			}
		})
	}
}

func TestBatch_RefusedBatchWritesNothing(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name    string
		index   uint64
		fill    func(b *Batch)
		wantErr error
		wantMsg string
	}{
		{"IndexAtApplied", 1, func(b *Batch) { b.PutJob(9, body("q", 9)) }, ErrStaleIndex, "batch index 1, store at 1"},
		{"IndexBelowApplied", 0, func(b *Batch) { b.PutJob(9, body("q", 9)) }, ErrStaleIndex, "store at 1"},
		{"EmptyQueueName", 2, func(b *Batch) { b.PutJob(9, body("q", 9)); b.PutDeadLetter("", 9, &storepb.DeadLetter{}) }, ErrInvalidArgument, "queue name must be 1..255 bytes, got 0"},
		{"QueueNameTooLong", 2, func(b *Batch) { b.PutJob(9, body("q", 9)); b.DeleteDeadLetter(strings.Repeat("x", 256), 9) }, ErrInvalidArgument, "queue name must be 1..255 bytes, got 256"},
		{"EmptyRange", 2, func(b *Batch) { b.PutJob(9, body("q", 9)); b.DeleteDeadLetters("q", 5, 5) }, ErrInvalidArgument, "dead-letter range [5, 5) is empty"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			s, _ := openMem(t)
			commit(t, s, 1, func(b *Batch) { b.PutJob(1, body("q", 1)) })
			b := s.NewBatch()
			tt.fill(b)
			err := b.Commit(tt.index, 1)
			if !errors.Is(err, tt.wantErr) || !strings.Contains(err.Error(), tt.wantMsg) {
				t.Fatalf("Commit err = %v, want %v containing %q", err, tt.wantErr, tt.wantMsg)
			}
			if s.AppliedIndex() != 1 {
				t.Errorf("AppliedIndex = %d after a refused batch, want 1", s.AppliedIndex())
			}
			if _, err := s.Job(9); !errors.Is(err, ErrNotFound) {
				t.Errorf("a refused batch wrote job 9 (err %v)", err)
			}
		})
	}
}

func TestStore_Jobs(t *testing.T) {
	t.Parallel()
	s, _ := openMem(t)
	commit(t, s, 1, func(b *Batch) {
		for id := uint64(1); id <= 20; id++ {
			b.PutJob(id, body("q", int(id)))
		}
	})
	commit(t, s, 2, func(b *Batch) {
		for id := uint64(1); id <= 10; id++ {
			b.DeleteJob(id)
		}
	})
	tests := []struct {
		name string
		ids  []uint64
		want string // id:present
	}{
		{"HeadInOrder", []uint64{11, 12, 13}, "11:true 12:true 13:true"},
		{"UnsortedIsSorted", []uint64{15, 11}, "11:true 15:true"},
		{"DeletedAndAbsentGiveNil", []uint64{3, 11, 25}, "3:false 11:true 25:false"},
		{"None", nil, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var got []string
			err := s.Jobs(tt.ids, func(id uint64, b *storepb.JobBody) error {
				if b != nil && !proto.Equal(b, body("q", int(id))) {
					t.Errorf("body of %d = %v", id, b)
				}
				got = append(got, fmt.Sprintf("%d:%t", id, b != nil))
				return nil
			})
			if err != nil {
				t.Fatal(err)
			}
			if strings.Join(got, " ") != tt.want {
				t.Errorf("Jobs(%v) = %q, want %q", tt.ids, strings.Join(got, " "), tt.want)
			}
		})
	}
	t.Run("RangeStopsWhenAsked", func(t *testing.T) {
		var got []uint64
		if err := s.JobRange(0, 100, func(id uint64, _ *storepb.JobBody) bool { got = append(got, id); return len(got) < 3 }); err != nil {
			t.Fatal(err)
		}
		if fmt.Sprint(got) != "[11 12 13]" {
			t.Errorf("JobRange = %v, want [11 12 13]", got)
		}
	})
}

func TestStore_DeadLettersPaging(t *testing.T) {
	t.Parallel()
	s, _ := openMem(t)
	commit(t, s, 1, func(b *Batch) {
		for id := uint64(1); id <= 7; id++ {
			b.PutDeadLetter("q", id*10, &storepb.DeadLetter{FinalAttempt: uint32(id)})
		}
		b.PutDeadLetter("q2", 5, &storepb.DeadLetter{})
	})
	tests := []struct {
		after uint64
		limit int
		want  string
	}{
		{0, 3, "[10 20 30]"},
		{30, 3, "[40 50 60]"},
		{60, 3, "[70]"},
		{70, 3, "[]"},
		{25, 0, "[30 40 50 60 70]"},
	}
	for _, tt := range tests {
		t.Run(fmt.Sprintf("After%dLimit%d", tt.after, tt.limit), func(t *testing.T) {
			got := []uint64{}
			if err := s.DeadLetters("q", tt.after, tt.limit, func(id uint64, d *storepb.DeadLetter) bool {
				if d.GetFinalAttempt() != uint32(id/10) {
					t.Errorf("record of %d holds final attempt %d", id, d.GetFinalAttempt())
				}
				got = append(got, id)
				return true
			}); err != nil {
				t.Fatal(err)
			}
			if fmt.Sprint(got) != tt.want {
				t.Errorf("page = %v, want %s", got, tt.want)
			}
		})
	}
}

func TestStore_ReopenKeepsFlushedState(t *testing.T) {
	t.Parallel()
	fs := vfs.NewMem()
	s, err := Open("db", Options{FS: fs})
	if err != nil {
		t.Fatal(err)
	}
	commit(t, s, 41, func(b *Batch) { b.PutJob(1, body("q", 1)) })
	if err := s.Flush(); err != nil {
		t.Fatal(err)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	if err := s.NewBatch().Commit(42, 1); !errors.Is(err, ErrClosed) {
		t.Errorf("commit after Close: %v, want ErrClosed", err)
	}
	r, err := Open("db", Options{FS: fs})
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	if r.AppliedIndex() != 41 || r.AppliedTerm() != 1 {
		t.Errorf("reopened at %d/%d, want 41/1", r.AppliedIndex(), r.AppliedTerm())
	}
	if _, err := r.Job(1); err != nil {
		t.Errorf("Job(1) after reopen: %v", err)
	}
}

func TestOpen_RefusesNewerFormat(t *testing.T) {
	t.Parallel()
	fs := vfs.NewMem()
	s, err := Open("db", Options{FS: fs})
	if err != nil {
		t.Fatal(err)
	}
	meta, _ := marshal.Marshal(&storepb.StoreMeta{FormatVersion: FormatVersion + 1, AppliedIndex: 3})
	if err := s.db.Set(metaKey, meta, pebble.NoSync); err != nil {
		t.Fatal(err)
	}
	if err := s.Flush(); err != nil {
		t.Fatal(err)
	}
	_ = s.Close()
	_, err = Open("db", Options{FS: fs})
	if !errors.Is(err, ErrCorrupt) || !strings.Contains(err.Error(), "store format 2 is newer than this binary's 1") {
		t.Fatalf("Open of a newer store: %v", err)
	}
}

// TestDigest_DependsOnContentNotLayout: two replicas apply the same
// entries, one flushing and compacting after each, the other never; their
// digests are equal. A different record or index gives a different one.
func TestDigest_DependsOnContentNotLayout(t *testing.T) {
	t.Parallel()
	w := newCrashWorkload(7, 400)
	a, _ := openMem(t)
	b, _ := openMem(t)
	for i := 1; i <= 400; i++ {
		if err := w.apply(a, i, i); err != nil {
			t.Fatal(err)
		}
		if i%50 == 0 {
			if err := a.Flush(); err != nil {
				t.Fatal(err)
			}
			if err := a.db.Compact(t.Context(), []byte{kindBody}, []byte{kindEnd}, true); err != nil {
				t.Fatal(err)
			}
		}
	}
	if err := w.apply(b, 1, 400); err != nil {
		t.Fatal(err)
	}
	da, ia, err := a.Digest()
	if err != nil {
		t.Fatal(err)
	}
	db, ib, err := b.Digest()
	if err != nil {
		t.Fatal(err)
	}
	if da != db || ia != ib || ia != 400 {
		t.Fatalf("replicas differ: %x@%d vs %x@%d", da, ia, db, ib)
	}
	if n := a.db.Metrics().Total().TablesCount; n == 0 {
		t.Fatalf("replica a holds no SST: the layouts did not differ")
	}
	commit(t, b, 401, func(bt *Batch) { bt.PutProgress(1, &storepb.JobProgress{LastReason: "x"}) })
	commit(t, a, 401, func(bt *Batch) { bt.PutProgress(1, &storepb.JobProgress{LastReason: "y"}) })
	da, _, _ = a.Digest()
	db, _, _ = b.Digest()
	if da == db {
		t.Fatal("a different record gave the same digest")
	}
}

// TestCheckpoint_StreamAndInstall: a checkpoint streamed and installed on
// another node holds the state at the checkpoint's index, not what the
// source applied after it.
func TestCheckpoint_StreamAndInstall(t *testing.T) {
	t.Parallel()
	w := newCrashWorkload(11, 300)
	src, o := openMem(t)
	if err := w.apply(src, 1, 200); err != nil {
		t.Fatal(err)
	}
	want, _, err := src.Digest()
	if err != nil {
		t.Fatal(err)
	}
	index, err := src.Checkpoint("ckpt")
	if err != nil || index != 200 {
		t.Fatalf("Checkpoint = %d, %v; want 200", index, err)
	}
	if err := w.apply(src, 201, 300); err != nil {
		t.Fatal(err)
	}
	var stream bytes.Buffer
	if err := WriteCheckpoint("ckpt", &stream, o); err != nil {
		t.Fatal(err)
	}
	if size, err := CheckpointStreamBytes("ckpt", o); err != nil || size != int64(stream.Len()) {
		t.Fatalf("CheckpointStreamBytes = %d, %v; WriteCheckpoint wrote %d", size, err, stream.Len())
	}

	// The follower: an older store in place, the stream staged, installed.
	fo := Options{FS: vfs.NewMem()}
	old, err := Open("db", fo)
	if err != nil {
		t.Fatal(err)
	}
	commit(t, old, 5, func(b *Batch) { b.PutJob(999999, body("q", 1)) })
	_ = old.Close()
	if err := ReadCheckpoint(&stream, "staged", fo); err != nil {
		t.Fatal(err)
	}
	got, err := Install("staged", "db", fo)
	if err != nil {
		t.Fatal(err)
	}
	defer got.Close()
	d, applied, err := got.Digest()
	if err != nil {
		t.Fatal(err)
	}
	if applied != 200 || got.AppliedIndex() != 200 || d != want {
		t.Fatalf("installed store at %d (digest equal: %t), want 200 and the checkpoint's digest", applied, d == want)
	}
	if err := w.apply(got, 201, 300); err != nil {
		t.Fatalf("replay after install: %v", err)
	}
	srcDigest, _, _ := src.Digest()
	if gd, _, _ := got.Digest(); gd != srcDigest {
		t.Fatal("follower differs from the source after replaying the log past the checkpoint")
	}
}

func TestReadCheckpoint_RefusesBadStreams(t *testing.T) {
	t.Parallel()
	tarOf := func(name string, typ byte) []byte {
		var buf bytes.Buffer
		tw := tar.NewWriter(&buf)
		_ = tw.WriteHeader(&tar.Header{Name: name, Typeflag: typ, Size: 0, Mode: 0o644})
		_ = tw.Close()
		return buf.Bytes()
	}
	tests := []struct {
		name   string
		stream []byte
		want   string
	}{
		{"PathEscape", tarOf("../MANIFEST-000001", tar.TypeReg), "not a plain file"},
		{"Subdirectory", tarOf("a/b", tar.TypeReg), "not a plain file"},
		{"Symlink", tarOf("x", tar.TypeSymlink), "not a plain file"},
		{"Garbage", []byte("this is not a tar stream, it is long enough to be read as a header block"), "checkpoint stream"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			err := ReadCheckpoint(bytes.NewReader(tt.stream), "staged", Options{FS: vfs.NewMem()})
			if !errors.Is(err, ErrCorrupt) || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("err = %v, want ErrCorrupt containing %q", err, tt.want)
			}
		})
	}
}

// TestSnapshot_PointInTime: a snapshot sees the job bodies committed when it
// was taken, in id order, and none of what is put or deleted after; Close
// waits for it.
func TestSnapshot_PointInTime(t *testing.T) {
	s, err := Open(t.TempDir(), Options{})
	if err != nil {
		t.Fatal(err)
	}
	b := s.NewBatch()
	for _, id := range []uint64{3, 1, 2} {
		b.PutJob(id, &storepb.JobBody{Payload: []byte{byte(id)}})
	}
	if err := b.Commit(1, 1); err != nil {
		t.Fatal(err)
	}
	snap, err := s.NewSnapshot()
	if err != nil {
		t.Fatal(err)
	}
	b = s.NewBatch()
	b.DeleteJob(2)
	b.PutJob(4, &storepb.JobBody{Payload: []byte{4}})
	if err := b.Commit(2, 1); err != nil {
		t.Fatal(err)
	}
	var got []uint64
	if err := snap.EachJob(func(id uint64, p []byte) error {
		if len(p) != 1 || p[0] != byte(id) {
			t.Errorf("job %d: payload %v", id, p)
		}
		got = append(got, id)
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(got, []uint64{1, 2, 3}) {
		t.Errorf("snapshot jobs %v, want [1 2 3]", got)
	}
	stop := errors.New("stop")
	if err := snap.EachJob(func(uint64, []byte) error { return stop }); !errors.Is(err, stop) {
		t.Errorf("EachJob: %v, want fn's error", err)
	}
	closed := make(chan struct{})
	go func() { _ = s.Close(); close(closed) }()
	select {
	case <-closed:
		t.Fatal("Close returned while a snapshot was open")
	case <-time.After(50 * time.Millisecond):
	}
	if err := snap.Close(); err != nil {
		t.Fatal(err)
	}
	<-closed
	if _, err := s.NewSnapshot(); !errors.Is(err, ErrClosed) {
		t.Errorf("NewSnapshot after Close: %v, want ErrClosed", err)
	}
}
