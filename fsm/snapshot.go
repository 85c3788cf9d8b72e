package fsm

import (
	"bufio"
	"crypto/sha256"
	"encoding/binary"
	"errors"
	"fmt"
	"hash"
	"hash/crc32"
	"io"
	"math"
	"os"
	"path/filepath"

	"github.com/hashicorp/raft"
	"google.golang.org/protobuf/proto"

	"github.com/sepp-io/sepp/engine"
	cmdpb "github.com/sepp-io/sepp/proto/seppcmd/v1"
	storepb "github.com/sepp-io/sepp/proto/seppstore/v1"
	"github.com/sepp-io/sepp/store"
)

// Snapshot stream layout (all integers big-endian):
//
//	magic            8 bytes  "SEPPSNAP"
//	format version   uint32   1 to 6 (SnapshotFormatVersion)
//	meta length      uint32   then that many bytes of cmdpb.SnapshotMeta
//	engine length    uint64   (formats 1 to 5) then that many bytes of
//	                          engine.Snapshot output
//	engine chunks    (format 6) records of
//	                   length  uint32 (at most maxEngineChunkBytes; 0
//	                           ends the section), then that many bytes of
//	                           engine.Snapshot output
//	payloads         (formats 2 and 3) records of
//	                   job id  uint64 (ascending, 0 ends the section)
//	                   length  uint32, then that many payload bytes
//	completed        (formats 3 and 4) records of
//	                   job id  uint64 (ascending, 0 ends the section)
//	                   length  uint32, then that many bytes of a
//	                           seppstore.v1.CompletedJob
//	checksum         uint32   CRC-32C of every byte before it
//	payloads         (format 4 only) as above, then
//	checksum         uint32   (format 4 only) CRC-32C of the payload section
//	store files      (formats 5 and 6) the payload store's checkpoint at
//	                          the snapshot's index, a tar archive of its
//	                          files (store.WriteCheckpoint), then
//	checksum         uint32   (formats 5 and 6) CRC-32C of the archive
//
// Format 1 carries the payloads inside the engine's part. Format 2 (issue 35
// item 3) writes the engine's part with payload lengths only
// (engine.SnapshotOptions.PayloadLengths) and the bodies after it, read
// from a point-in-time view of the payload store (store.Snapshot) taken
// with the engine's part under the lock, so both are the state at the
// snapshot's index: the lock is held for O(jobs) of metadata, and the
// bodies are read and written by Persist on raft's snapshot goroutine
// while entries keep applying. A node writes format 2 only with a payload
// store and only once every member restores it (writesPayloadSection);
// every binary restores both.
//
// Format 3 (issue 37) adds the completed jobs' records after the payloads,
// read from the same view: the engine's part then holds each queue's
// completed ids only (engine.SnapshotOptions.CompletedSection), so their
// results are not copied under the lock either. A node writes it once
// every member applies CommandVersionResults, whose binaries restore it.
//
// Format 4 (issue 35 item 4) moves the payload section last, after the
// checksum of everything before it, with a checksum of its own. A node
// restarting over its payload store (at or past the snapshot: the store
// holds every payload already) reads the snapshot up to the first checksum
// and stops: at 5M jobs of 1 KiB it reads the engine's part (a few hundred
// MB) instead of 5 GiB of payloads it would only check. A follower
// installing the snapshot reads both sections and checks both checksums
// before the state is swapped in. A node writes format 4 once every member
// applies CommandVersionSnapshotPayloadsLast, whose binaries restore it.
//
// Format 5 (issue 35 item 3) ends with the payload store itself in place
// of its records: the checkpoint Snapshot takes, as its files. A follower
// that installs it writes the files as they come, checks their checksum,
// renames them into place (store.Install) and opens them: no record is
// decoded, checked or written again, and the leader reads files rather
// than walking its checkpoint record by record. The bytes are the leader's
// physical files, which differ between replicas (each compacts on its
// own); what they hold is the state at the snapshot's index, which the
// store's applied index, required to equal the snapshot's, pins. A node
// writes format 5 only with snapshot checkpoints (Config.
// SnapshotCheckpointDir) and once every member applies
// CommandVersionSnapshotStoreFiles, whose binaries restore it.
//
// Format 6 is format 5 with the engine's part in chunks, each with its
// length, ended by an empty one: the part's length need not be known
// before it is written, so Persist writes it once, straight into the
// snapshot. Before, it wrote the part into a temporary file to learn its
// length, then copied the file into the snapshot: at a backlog of 5M jobs,
// 296 MiB written twice, which was most of a snapshot's CPU on the leader
// (docs/changelog.md, 2026-12-06). A node writes format 6 once every
// member applies CommandVersionSnapshotEngineStreamed, whose binaries
// restore it.
//
// The engine's part is copied from a temporary file written under the read
// lock in Snapshot, so a large state never needs a second in-memory copy and
// the lock is held only for one sequential write to local disk, not for the
// network transfer to a follower.
const (
	snapshotMagic = "SEPPSNAP"
	// snapshotFormatInline is format 1: payloads inside the engine's part.
	snapshotFormatInline = 1
	// snapshotFormatPayloadSection is format 2: the payload section after it.
	snapshotFormatPayloadSection = 2
	// snapshotFormatCompletedSection is format 3: the completed section
	// after the payloads.
	snapshotFormatCompletedSection = 3
	// snapshotFormatPayloadsLast is format 4: the completed section and a
	// checksum, then the payload section and a checksum of its own.
	snapshotFormatPayloadsLast = 4
	// snapshotFormatStoreFiles is format 5: format 4 with the payload
	// store's files in place of the payload section.
	snapshotFormatStoreFiles = 5
	// snapshotFormatEngineStreamed is format 6: format 5 with the engine's
	// part in chunks.
	snapshotFormatEngineStreamed = 6
	// SnapshotFormatVersion is the newest layout above; Restore accepts 1
	// to 6.
	SnapshotFormatVersion = snapshotFormatEngineStreamed
	// maxEngineChunkBytes bounds one chunk of format 6's engine part, so
	// that a corrupt length cannot make Restore read a gigabyte as one.
	// Persist writes chunks of engineChunkBytes.
	maxEngineChunkBytes = 16 << 20
	engineChunkBytes    = 1 << 20
	// maxCompletedRecordBytes bounds one record of the completed section:
	// a result of at most 16 MiB (limits.max_result_bytes) and its job's
	// fields, so that a corrupt length cannot make Restore allocate more.
	maxCompletedRecordBytes = 32 << 20
	// maxSnapshotMetaBytes bounds the meta section (a member list and a time),
	// so that a corrupt length cannot make Restore allocate gigabytes.
	maxSnapshotMetaBytes = 16 << 20
)

// ErrSnapshot wraps every reason a snapshot stream is rejected.
var ErrSnapshot = errors.New("fsm: bad snapshot")

var castagnoli = crc32.MakeTable(crc32.Castagnoli)

// Snapshot captures the state for raft. It writes the engine's canonical
// snapshot to a temporary file under the read lock; Persist streams that file
// to the sink. Raft calls it on the goroutine that applies entries, so no
// entry is applied while it runs.
func (f *FSM) Snapshot() (raft.FSMSnapshot, error) {
	tmp, err := os.CreateTemp(f.cfg.SnapshotTempDir, "sepp-fsm-snapshot-*.tmp")
	if err != nil {
		return nil, fmt.Errorf("fsm: snapshot temp file: %w", err)
	}
	snap := &fileSnapshot{path: tmp.Name(), format: snapshotFormatInline}
	var checkpointed chan error // the store's checkpoint, when one is being taken
	// joinCheckpoint waits for that checkpoint (before Release may remove
	// its directory; taken between two applies like the rest) and adds
	// its error to err.
	joinCheckpoint := func(err error) error {
		if checkpointed == nil {
			return err
		}
		return errors.Join(err, <-checkpointed)
	}

	f.mu.RLock()
	if f.behindStoreLocked() {
		f.mu.RUnlock()
		snap.Release()
		return nil, fmt.Errorf("fsm: snapshot: %w", ErrCatchingUp) // raft tries again at its next interval
	}
	if f.payloads != nil {
		if f.writesPayloadSectionLocked() {
			snap.format = snapshotFormatPayloadSection
			if f.membersApplyLocked(CommandVersionResults) {
				snap.format = snapshotFormatCompletedSection
			}
			if f.membersApplyLocked(CommandVersionSnapshotPayloadsLast) {
				snap.format = snapshotFormatPayloadsLast
			}
			if snap.format == snapshotFormatPayloadsLast && f.cfg.SnapshotCheckpointDir != "" && f.membersApplyLocked(CommandVersionSnapshotStoreFiles) {
				snap.format = snapshotFormatStoreFiles
				if f.membersApplyLocked(CommandVersionSnapshotEngineStreamed) {
					snap.format = snapshotFormatEngineStreamed
				}
			}
		}
		// The store's index at or past this snapshot's, flushed before raft
		// keeps the snapshot (Persist waits for it), so that a restart from
		// this snapshot, even after a crash, finds the store at or past it
		// and keeps it. Pebble flushes memtables in order: the records of
		// every earlier entry are durable with the index.
		err := f.payloads.markApplied()
		if err == nil && snap.format >= snapshotFormatPayloadsLast && f.cfg.SnapshotCheckpointDir != "" {
			// The payloads stay in a checkpoint of the store at this
			// index (snapshot_checkpoint.go): a flush and hard links,
			// between two applies so that it holds exactly this state.
			// Flushed, the store is past the snapshot at any restart.
			// It runs beside the engine's part below, which reads only
			// the engine: with a core free for each, applies wait for
			// the longer of the two rather than their sum.
			snap.checkpoint = filepath.Join(f.cfg.SnapshotCheckpointDir, fmt.Sprintf("%s%d", checkpointPendingPrefix, f.appliedIndex.Load()))
			_ = os.RemoveAll(snap.checkpoint) // a failed snapshot's at this index
			checkpointed = make(chan error, 1)
			go func(st *store.Store, dir string) {
				_, err := st.Checkpoint(dir)
				checkpointed <- err
			}(f.payloads.st, snap.checkpoint)
			if snap.format == snapshotFormatPayloadsLast {
				snap.payloadSection = f.eng.PayloadSectionBytes()
			} // format 5's section is the checkpoint's files, sized once they exist (writeTo)
		} else if err == nil {
			snap.storeFlushed, err = f.payloads.st.FlushAsync()
		}
		if err == nil && snap.format >= snapshotFormatPayloadSection {
			// Between two applies, under the lock: the store's view is
			// exactly the engine's at this index, whatever is applied
			// while Persist reads it.
			snap.bodies, err = f.payloads.st.NewSnapshot()
		}
		if err != nil {
			err = joinCheckpoint(err)
			f.mu.RUnlock()
			snap.Release()
			return nil, err
		}
	}
	meta := &cmdpb.SnapshotMeta{LastNowUnixNano: unixNano(f.lastNow), AppliedIndex: f.appliedIndex.Load()}
	for _, n := range f.sortedNodesLocked() {
		meta.Nodes = append(meta.Nodes, nodeMetaToProto(n))
	}
	bw := bufio.NewWriterSize(tmp, 1<<20)
	opts := engine.SnapshotOptions{
		PayloadLengths:   snap.format >= snapshotFormatPayloadSection,
		CompletedSection: snap.format >= snapshotFormatCompletedSection,
		Protobuf:         f.membersApplyLocked(CommandVersionSnapshotProtobuf),
	}
	// The engine's part is captured here, between two applies, and
	// written by Persist while applies go on (engine/snapshot_capture.go);
	// a state the engine does not capture is written now.
	snap.engine, err = f.eng.CaptureSnapshot(opts)
	if err == nil && snap.engine == nil {
		err = f.eng.SnapshotWith(bw, opts)
	}
	err = joinCheckpoint(err)
	if err == nil {
		// Under the lock, between two applies: a restart from this
		// snapshot replays what is applied from here on.
		f.commandsSinceSnapshot.Store(0)
		f.workAtSnapshot.Store(f.eng.Work())
	}
	f.mu.RUnlock()
	if err == nil {
		err = bw.Flush()
	}
	if err == nil && snap.engine == nil {
		var st os.FileInfo
		if st, err = tmp.Stat(); err == nil {
			snap.engineLen = st.Size()
		}
	}
	if cerr := tmp.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		snap.Release()
		return nil, fmt.Errorf("fsm: snapshot engine: %w", err)
	}
	snap.meta, err = proto.MarshalOptions{Deterministic: true}.Marshal(meta)
	if err != nil {
		snap.Release()
		return nil, fmt.Errorf("fsm: snapshot meta: %w", err)
	}
	return snap, nil
}

// writesPayloadSectionLocked reports whether a snapshot is written in
// format 2: every member applies CommandVersionSnapshotPayloads. A pure
// function of the replicated member list, as every byte a snapshot holds
// is a function of the log. No member known (a state machine outside a
// cluster, tests): format 1, as before.
func (f *FSM) writesPayloadSectionLocked() bool {
	return f.membersApplyLocked(CommandVersionSnapshotPayloads)
}

// membersApplyLocked reports whether every member applies command version
// v; false with no member known.
func (f *FSM) membersApplyLocked(v uint32) bool {
	if len(f.nodes) == 0 {
		return false
	}
	for _, n := range f.nodes {
		if !n.AppliesCommandVersion(v) {
			return false
		}
	}
	return true
}

// fileSnapshot is a captured state waiting to be persisted.
type fileSnapshot struct {
	path      string
	format    uint32
	meta      []byte
	engineLen int64
	// bodies is the payload store's view at the snapshot's index, read by
	// Persist into the payload section (format 2 only).
	bodies *store.Snapshot
	// storeFlushed waits for the payload store's flush started at the
	// snapshot (nil without a store, or with a checkpoint).
	storeFlushed func() error
	// checkpoint is the pending checkpoint of the store at the snapshot's
	// index that holds its payloads (format 4 or 5 with
	// Config.SnapshotCheckpointDir), and payloadSection the size of the
	// payload section it makes in format 4; "" without.
	checkpoint     string
	payloadSection int64
	// engine is the engine's part as captured, until writeTo writes it
	// into the file at path; nil once written, or when it was written at
	// the capture.
	engine *engine.SnapshotCapture
}

// writeEngine writes the captured engine's part into the file at path,
// once.
func (s *fileSnapshot) writeEngine() error {
	if s.engine == nil {
		return nil
	}
	c := s.engine
	s.engine = nil
	file, err := os.OpenFile(s.path, os.O_WRONLY|os.O_TRUNC, 0)
	if err != nil {
		c.Release()
		return err
	}
	bw := bufio.NewWriterSize(file, 1<<20)
	n, err := c.WriteTo(bw)
	if err == nil {
		err = bw.Flush()
	}
	if cerr := file.Close(); err == nil {
		err = cerr
	}
	s.engineLen = n
	return err
}

// writeEngineSized writes the engine's part of formats 1 to 5: its
// length, then its bytes, from the temporary file it is written into first
// to learn the length.
func (s *fileSnapshot) writeEngineSized(out io.Writer) error {
	if err := s.writeEngine(); err != nil {
		return fmt.Errorf("engine snapshot: %w", err)
	}
	file, err := os.Open(s.path)
	if err != nil {
		return err
	}
	defer file.Close()
	if _, err := out.Write(binary.BigEndian.AppendUint64(nil, uint64(s.engineLen))); err != nil { //nolint:gosec // a file's size
		return err
	}
	n, err := io.Copy(out, file)
	if err != nil {
		return err
	}
	if n != s.engineLen {
		return fmt.Errorf("engine snapshot file is %d bytes, expected %d", n, s.engineLen)
	}
	return nil
}

// Persist streams the snapshot to the sink and closes it once the payload
// store's flush is done; on error it cancels the sink.
func (s *fileSnapshot) Persist(sink raft.SnapshotSink) error {
	err := s.writeTo(sink)
	if err == nil && s.storeFlushed != nil {
		err = s.storeFlushed()
	}
	if err != nil {
		_ = sink.Cancel()
		return fmt.Errorf("fsm: persist snapshot: %w", err)
	}
	return sink.Close()
}

func (s *fileSnapshot) writeTo(w io.Writer) error {
	crc := crc32.New(castagnoli)
	bw := bufio.NewWriterSize(w, 1<<20)
	out := io.MultiWriter(bw, crc)

	header := make([]byte, 0, 8+4+4)
	header = append(header, snapshotMagic...)
	header = binary.BigEndian.AppendUint32(header, s.format)
	header = binary.BigEndian.AppendUint32(header, uint32(len(s.meta)))
	if _, err := out.Write(header); err != nil {
		return err
	}
	if _, err := out.Write(s.meta); err != nil {
		return err
	}
	if s.format >= snapshotFormatEngineStreamed {
		if err := s.writeEngineChunks(out); err != nil {
			return fmt.Errorf("engine snapshot: %w", err)
		}
	} else if err := s.writeEngineSized(out); err != nil {
		return err
	}
	if s.format >= snapshotFormatPayloadsLast {
		if err := writeCompletedSection(out, s.bodies); err != nil {
			return err
		}
		if _, err := bw.Write(binary.BigEndian.AppendUint32(nil, crc.Sum32())); err != nil {
			return err
		}
		if s.checkpoint != "" {
			// The last section comes from the checkpoint: the payload
			// records (format 4) or its files (format 5).
			files := s.format >= snapshotFormatStoreFiles
			size := s.payloadSection
			if files {
				var err error
				if size, err = store.CheckpointStreamBytes(s.checkpoint, store.Options{}); err != nil {
					return err
				}
			}
			if sink, ok := w.(checkpointAdopter); ok {
				// The section stays in the checkpoint: the sink keeps it,
				// and opening the snapshot streams it.
				sink.adopt(s.checkpoint, size, files)
				return bw.Flush()
			}
			// A sink that keeps bytes only: the section read from the
			// checkpoint, as opening the snapshot would give it.
			if err := writeCheckpointSection(bw, s.checkpoint, size, files); err != nil {
				return err
			}
			return bw.Flush()
		}
		payloadCRC := crc32.New(castagnoli)
		if err := writePayloadSection(io.MultiWriter(bw, payloadCRC), s.bodies); err != nil {
			return err
		}
		if _, err := bw.Write(binary.BigEndian.AppendUint32(nil, payloadCRC.Sum32())); err != nil {
			return err
		}
		return bw.Flush()
	}
	if s.bodies != nil {
		if err := writePayloadSection(out, s.bodies); err != nil {
			return err
		}
		if s.format == snapshotFormatCompletedSection {
			if err := writeCompletedSection(out, s.bodies); err != nil {
				return err
			}
		}
	}
	if _, err := bw.Write(binary.BigEndian.AppendUint32(nil, crc.Sum32())); err != nil {
		return err
	}
	return bw.Flush()
}

// writePayloadSection writes the payload section of format 2 from the
// store's view: each job body in ascending id order, then the id 0.
func writePayloadSection(out io.Writer, bodies *store.Snapshot) error {
	return writeRecordSection(out, "payload", bodies.EachJob, func(id uint64, payload []byte) error {
		if id == 0 || len(payload) == 0 || len(payload) > math.MaxUint32 {
			// The engine never stores an empty payload nor uses id 0.
			return fmt.Errorf("payload store holds job %d with %d bytes", id, len(payload))
		}
		return nil
	})
}

// writeCompletedSection writes the completed section of format 3 from the
// store's view: each completed job's record as the store holds it, in
// ascending id order, then the id 0.
func writeCompletedSection(out io.Writer, view *store.Snapshot) error {
	return writeRecordSection(out, "completed", view.EachCompleted, func(id uint64, record []byte) error {
		if id == 0 || len(record) > maxCompletedRecordBytes {
			return fmt.Errorf("store holds completed job %d with a record of %d bytes", id, len(record))
		}
		return nil
	})
}

// writeRecordSection writes one section of id-keyed records as the store
// view's each walks them: per record its id (8 bytes, big endian), its
// length (4 bytes) and its bytes, each first passed by check; then the
// id 0, which ends the section.
func writeRecordSection(out io.Writer, name string, each func(func(id uint64, rec []byte) error) error, check func(id uint64, rec []byte) error) error {
	var hdr [12]byte
	err := each(func(id uint64, rec []byte) error {
		if err := check(id, rec); err != nil {
			return err
		}
		binary.BigEndian.PutUint64(hdr[:8], id)
		binary.BigEndian.PutUint32(hdr[8:], uint32(len(rec)))
		if _, err := out.Write(hdr[:]); err != nil {
			return err
		}
		_, err := out.Write(rec)
		return err
	})
	if err != nil {
		return fmt.Errorf("%s section: %w", name, err)
	}
	var end [8]byte // the id 0 ends the section
	_, err = out.Write(end[:])
	return err
}

// readCompletedSection hands each record of format 3's completed section
// to the restored engine (engine.LoadCompleted): exactly one per completed
// job the engine's part holds, in ascending id order.
func readCompletedSection(r io.Reader, eng *engine.Engine) error {
	return readCompletedRecords(r, eng.CompletedIDs(), eng.LoadCompleted)
}

// readCompletedRecords reads the section's records, which must be exactly
// those of want (ascending), and hands each to load.
func readCompletedRecords(r io.Reader, want []engine.JobID, load func(*engine.CompletedRecord)) error {
	var (
		rec [12]byte
		buf []byte
		n   int
	)
	for {
		if _, err := io.ReadFull(r, rec[:8]); err != nil {
			return fmt.Errorf("record %d: %w", n, eofIsUnexpected(err))
		}
		id := binary.BigEndian.Uint64(rec[:8])
		if id == 0 {
			break
		}
		if n >= len(want) || engine.JobID(id) != want[n] {
			return fmt.Errorf("record of job %d where the engine's next completed job is %v", id, want[n:min(n+1, len(want))])
		}
		if _, err := io.ReadFull(r, rec[8:]); err != nil {
			return fmt.Errorf("job %d: %w", id, eofIsUnexpected(err))
		}
		size := binary.BigEndian.Uint32(rec[8:])
		if size > maxCompletedRecordBytes {
			return fmt.Errorf("job %d: a record of %d bytes, above %d", id, size, maxCompletedRecordBytes)
		}
		if cap(buf) < int(size) {
			buf = make([]byte, size)
		}
		buf = buf[:size]
		if _, err := io.ReadFull(r, buf); err != nil {
			return fmt.Errorf("job %d: %w", id, eofIsUnexpected(err))
		}
		c := &storepb.CompletedJob{}
		if err := proto.Unmarshal(buf, c); err != nil {
			return fmt.Errorf("job %d: %w", id, err)
		}
		rec := completedFromStore(engine.JobID(id), c)
		load(&rec)
		n++
	}
	if n != len(want) {
		return fmt.Errorf("%d completed records, the engine keeps %d completed jobs", n, len(want))
	}
	return nil
}

// Release removes the temporary file and releases the store's view.
func (s *fileSnapshot) Release() {
	if s.engine != nil {
		s.engine.Release()
	}
	_ = os.Remove(s.path)
	if s.checkpoint != "" {
		_ = os.RemoveAll(s.checkpoint) // gone already when its sink adopted it
	}
	if s.bodies != nil {
		_ = s.bodies.Close()
	}
}

// Restore replaces the state with a snapshot's: it builds a fresh engine from
// the stream, verifies the checksum, and only then swaps it in. A corrupt or
// truncated stream returns an error wrapping ErrSnapshot and leaves the
// current state untouched.
func (f *FSM) Restore(rc io.ReadCloser) error {
	defer rc.Close()
	if f.payloads != nil {
		return f.restoreWithPayloadStore(rc)
	}
	eng, meta, err := readSnapshot(bufio.NewReaderSize(rc, 1<<20), f.cfg.Engine, nil)
	if err != nil {
		return err
	}
	f.install(eng, meta)
	return nil
}

// restoreWithPayloadStore restores with the node's payload store. When
// the store is at or past the snapshot's index (a node's own snapshot at
// its start), the snapshot's payloads are read past, not written: the
// store keeps what it holds and the engine replays the entries up to the
// store's index without touching it (payloadStore). Otherwise the store is
// emptied and refilled from the snapshot. It holds the lock throughout:
// the engine being replaced reads its payloads from the store. A snapshot
// that fails to refill the store stops the node: the old engine's payloads
// are gone with the store's old content, so no state is left to serve.
//
// A format 5 snapshot carries the store's files: they are staged beside
// the store while the engine is restored, writing nothing, and swapped in
// only once both checksums and the files' applied index hold, so a bad
// stream leaves the store and the engine as they were.
func (f *FSM) restoreWithPayloadStore(rc io.Reader) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	var (
		kept, installing bool
		snapIdx          uint64
	)
	eng, meta, err := readSnapshot(bufio.NewReaderSize(rc, 1<<20), f.cfg.Engine, func(meta *cmdpb.SnapshotMeta, format uint32) (payloadChoice, error) {
		snapIdx = meta.GetAppliedIndex()
		if kept = f.payloads.keeps(snapIdx); kept {
			return payloadChoice{store: f.payloads, ahead: true}, nil
		}
		if format >= snapshotFormatStoreFiles {
			// The files are the store: the engine writes nothing.
			installing = true
			return payloadChoice{store: f.payloads, ahead: true, receiveFiles: f.payloads.stage}, nil
		}
		return payloadChoice{store: f.payloads}, f.payloads.reset()
	})
	if installing && err == nil {
		err = f.payloads.checkStaged(snapIdx)
	}
	if installing && err != nil {
		f.payloads.dropStaged()
	}
	if (kept || installing) && err != nil {
		return err // the store and the engine are as they were
	}
	if err != nil {
		panic(fmt.Sprintf("fsm: restore: %v", err))
	}
	switch {
	case kept:
		f.payloads.keep(snapIdx)
		f.log.Info("restored a snapshot over the payload store kept from the last run",
			"snapshot_index", snapIdx, "store_index", f.payloads.ahead)
	case installing:
		f.payloads.installStaged(snapIdx)
		f.log.Info("installed the payload store's files from a snapshot", "snapshot_index", snapIdx)
	default:
		f.payloads.endLoad(snapIdx)
	}
	f.installLocked(eng, meta)
	f.eng.SetPayloadsAhead(f.behindStoreLocked())
	f.notifyApplied()
	return nil
}

func (f *FSM) install(eng *engine.Engine, meta *cmdpb.SnapshotMeta) {
	f.mu.Lock()
	f.installLocked(eng, meta)
	f.mu.Unlock()
	f.notifyApplied()
}

func (f *FSM) installLocked(eng *engine.Engine, meta *cmdpb.SnapshotMeta) {
	nodes := make(map[string]NodeMeta, len(meta.GetNodes()))
	for _, n := range meta.GetNodes() {
		nodes[n.GetId()] = nodeMetaFromProto(n)
	}
	f.eng = eng
	f.lastNow = fromUnixNano(meta.GetLastNowUnixNano())
	f.nodes = nodes
	// A snapshot written before the field says 0: the index then stays
	// what it was until the next entry, as it did before.
	if i := meta.GetAppliedIndex(); i != 0 {
		f.appliedIndex.Store(i)
	}
	f.commandsSinceSnapshot.Store(0)
	f.workAtSnapshot.Store(eng.Work())
}

// payloadsFor chooses, once a snapshot's format and meta section are
// read, where its payloads go; an error stops the restore. nil: payloads
// stay in the heap.
type payloadsFor func(meta *cmdpb.SnapshotMeta, format uint32) (payloadChoice, error)

// payloadChoice is where a restored engine's payloads go.
type payloadChoice struct {
	// store is the store the engine keeps its payloads in.
	store engine.PayloadStore
	// ahead says that the store holds the payloads already, or will once
	// receiveFiles's are swapped in (engine.SetPayloadsAhead): the engine
	// reads them past and writes nothing.
	ahead bool
	// receiveFiles takes a format 5 snapshot's store files; nil: the
	// stream is not read past the first checksum (the store is ahead).
	receiveFiles func(io.Reader) error
}

func readSnapshot(r *bufio.Reader, engineCfg engine.Config, choose payloadsFor) (*engine.Engine, *cmdpb.SnapshotMeta, error) {
	crc := crc32.New(castagnoli)
	body := io.TeeReader(r, crc)

	header := make([]byte, 16)
	if _, err := io.ReadFull(body, header); err != nil {
		return nil, nil, fmt.Errorf("%w: header: %w", ErrSnapshot, err)
	}
	if string(header[:8]) != snapshotMagic {
		return nil, nil, fmt.Errorf("%w: magic %q, want %q", ErrSnapshot, header[:8], snapshotMagic)
	}
	format := binary.BigEndian.Uint32(header[8:12])
	if format < snapshotFormatInline || format > SnapshotFormatVersion {
		return nil, nil, fmt.Errorf("%w: format version %d, this binary restores 1 to %d", ErrSnapshot, format, SnapshotFormatVersion)
	}
	metaLen := binary.BigEndian.Uint32(header[12:16])
	if metaLen > maxSnapshotMetaBytes {
		return nil, nil, fmt.Errorf("%w: meta section of %d bytes exceeds the limit of %d", ErrSnapshot, metaLen, maxSnapshotMetaBytes)
	}
	metaBytes := make([]byte, metaLen)
	if _, err := io.ReadFull(body, metaBytes); err != nil {
		return nil, nil, fmt.Errorf("%w: meta: %w", ErrSnapshot, err)
	}
	meta := &cmdpb.SnapshotMeta{}
	if err := proto.Unmarshal(metaBytes, meta); err != nil {
		return nil, nil, fmt.Errorf("%w: meta: %w", ErrSnapshot, err)
	}
	var section engineSection
	if format >= snapshotFormatEngineStreamed {
		section = &engineChunks{r: body}
	} else {
		var lenBuf [8]byte
		if _, err := io.ReadFull(body, lenBuf[:]); err != nil {
			return nil, nil, fmt.Errorf("%w: engine length: %w", ErrSnapshot, err)
		}
		engineLen := binary.BigEndian.Uint64(lenBuf[:])
		if engineLen > 1<<62 {
			return nil, nil, fmt.Errorf("%w: engine section length %d is not plausible", ErrSnapshot, engineLen)
		}
		section = &engineBytes{LimitedReader: io.LimitedReader{R: body, N: int64(engineLen)}}
	}
	eng := engine.New(engineCfg)
	var choice payloadChoice
	if choose != nil {
		var err error
		if choice, err = choose(meta, format); err != nil {
			return nil, nil, err
		}
		eng.UsePayloadStore(choice.store)
		eng.SetPayloadsAhead(choice.ahead)
	} else if format >= snapshotFormatStoreFiles {
		return nil, nil, fmt.Errorf("%w: format %d carries the payload store's files, and this state machine keeps its payloads in memory", ErrSnapshot, format)
	}
	opts := engine.SnapshotOptions{
		PayloadLengths:   format >= snapshotFormatPayloadSection,
		CompletedSection: format >= snapshotFormatCompletedSection,
	}
	if err := eng.RestoreWith(section, opts); err != nil {
		return nil, nil, fmt.Errorf("%w: engine: %w", ErrSnapshot, err)
	}
	// The engine may stop before the end of its section; the rest still
	// counts towards the checksum and must be there.
	if err := section.finish(); err != nil {
		return nil, nil, fmt.Errorf("%w: engine section: %w", ErrSnapshot, err)
	}
	if format >= snapshotFormatPayloadsLast {
		if err := readPayloadsLast(r, body, crc, eng, format, choice); err != nil {
			return nil, nil, err
		}
		return eng, meta, nil
	}
	if format >= snapshotFormatPayloadSection {
		if err := readPayloadSection(body, eng); err != nil {
			return nil, nil, fmt.Errorf("%w: payload section: %w", ErrSnapshot, err)
		}
		eng.PayloadsLoaded()
	}
	if format == snapshotFormatCompletedSection {
		if err := readCompletedSection(body, eng); err != nil {
			return nil, nil, fmt.Errorf("%w: completed section: %w", ErrSnapshot, err)
		}
	}
	if err := readChecksum(r, crc.Sum32(), "checksum"); err != nil {
		return nil, nil, err
	}
	return eng, meta, nil
}

// readPayloadsLast reads what follows the engine's part in formats 4 and
// 5: the completed section and the checksum of everything before it (body
// tees into crc), then the last section and its own checksum: format 4's
// payload section, unless the payload store is ahead of the snapshot (it
// holds every payload already, and reading them would only check them),
// or format 5's store files, when the choice takes them. Nothing after
// the first checksum is read otherwise: the caller closes the stream.
func readPayloadsLast(r *bufio.Reader, body io.Reader, crc hash.Hash32, eng *engine.Engine, format uint32, choice payloadChoice) error {
	if err := readCompletedSection(body, eng); err != nil {
		return fmt.Errorf("%w: completed section: %w", ErrSnapshot, err)
	}
	if err := readChecksum(r, crc.Sum32(), "checksum"); err != nil {
		return err
	}
	if format >= snapshotFormatStoreFiles {
		eng.PayloadsLoaded()
		if choice.receiveFiles == nil {
			return nil
		}
		filesCRC := crc32.New(castagnoli)
		if err := choice.receiveFiles(io.TeeReader(r, filesCRC)); err != nil {
			if errors.Is(err, store.ErrCorrupt) || errors.Is(err, store.ErrInvalidArgument) || errors.Is(err, io.ErrUnexpectedEOF) {
				return fmt.Errorf("%w: store files: %w", ErrSnapshot, err)
			}
			return fmt.Errorf("fsm: restore: receive the store's files: %w", err)
		}
		return readChecksum(r, filesCRC.Sum32(), "store files checksum")
	}
	if choice.ahead {
		eng.PayloadsLoaded()
		return nil
	}
	payloadCRC := crc32.New(castagnoli)
	if err := readPayloadSection(io.TeeReader(r, payloadCRC), eng); err != nil {
		return fmt.Errorf("%w: payload section: %w", ErrSnapshot, err)
	}
	eng.PayloadsLoaded()
	return readChecksum(r, payloadCRC.Sum32(), "payload section checksum")
}

// readChecksum reads a section's stored CRC-32C and compares it with want.
func readChecksum(r io.Reader, want uint32, what string) error {
	var sumBuf [4]byte
	if _, err := io.ReadFull(r, sumBuf[:]); err != nil {
		return fmt.Errorf("%w: %s: %w", ErrSnapshot, what, err)
	}
	if got := binary.BigEndian.Uint32(sumBuf[:]); got != want {
		return fmt.Errorf("%w: %s %08x, computed %08x", ErrSnapshot, what, got, want)
	}
	return nil
}

// readPayloadSection hands each payload of format 2's section to the
// restored engine (engine.LoadPayload: into the store being filled, or
// only checked when the store kept from the last run is ahead). Each
// record must name a job the engine holds with a payload of exactly that
// length, in ascending id order, and every such job must have one: a
// length is checked against the engine's before anything is allocated, so
// a corrupt one asks for no more than the engine's job says.
func readPayloadSection(r io.Reader, eng *engine.Engine) error {
	var (
		rec  [12]byte
		buf  []byte
		last uint64
		n    int
	)
	for {
		if _, err := io.ReadFull(r, rec[:8]); err != nil {
			return fmt.Errorf("record %d: %w", n, eofIsUnexpected(err))
		}
		id := binary.BigEndian.Uint64(rec[:8])
		if id == 0 {
			break
		}
		if id <= last {
			return fmt.Errorf("job %d after job %d: ids must ascend", id, last)
		}
		last = id
		if _, err := io.ReadFull(r, rec[8:]); err != nil {
			return fmt.Errorf("job %d: %w", id, eofIsUnexpected(err))
		}
		size := binary.BigEndian.Uint32(rec[8:])
		want, ok := eng.PayloadLen(engine.JobID(id))
		if !ok || want != size || size == 0 {
			return fmt.Errorf("job %d: a payload of %d bytes, where the engine holds %v with %d", id, size, ok, want)
		}
		if cap(buf) < int(size) {
			buf = make([]byte, size)
		}
		buf = buf[:size]
		if _, err := io.ReadFull(r, buf); err != nil {
			return fmt.Errorf("job %d: %w", id, eofIsUnexpected(err))
		}
		if err := eng.LoadPayload(engine.JobID(id), buf); err != nil {
			return err
		}
		n++
	}
	if want := eng.PayloadCount(); n != want {
		return fmt.Errorf("%d payloads, the engine's jobs have %d", n, want)
	}
	return nil
}

func eofIsUnexpected(err error) error {
	if errors.Is(err, io.EOF) {
		return io.ErrUnexpectedEOF
	}
	return err
}

// Digest is a hash of the whole replicated state: the engine's digest, the
// state machine's clock and the member metadata. Two replicas that applied
// the same log have equal digests.
func (f *FSM) Digest() [32]byte {
	d, _ := f.DigestAt()
	return d
}

// DigestAt is Digest together with the index of the last log entry the
// digested state includes, read as one: replicas whose indexes are equal must
// have equal digests.
func (f *FSM) DigestAt() ([32]byte, uint64) {
	defer f.markOnDamage()
	f.mu.RLock()
	defer f.mu.RUnlock()
	if f.closed || f.behindStoreLocked() {
		return [32]byte{}, 0 // no state to compare: closed, or replaying over the kept store
	}
	return f.digestLocked(), f.appliedIndex.Load()
}

func (f *FSM) digestLocked() [32]byte {
	h := sha256.New()
	d := f.eng.Digest()
	h.Write(d[:])
	writeInt64(h, unixNano(f.lastNow))
	// A member's MaxCommandVersion and Facts are left out: a binary older than the
	// field drops it, and a digest must stay comparable across the binaries
	// of a rolling upgrade, when comparing replicas matters most. It steers
	// only which commands the leader proposes, which the log records.
	for _, n := range f.sortedNodesLocked() {
		for _, s := range []string{n.ID, n.RaftAddr, n.GRPCAddr, n.HTTPAddr} {
			writeInt64(h, int64(len(s)))
			h.Write([]byte(s))
		}
	}
	var out [32]byte
	copy(out[:], h.Sum(nil))
	return out
}

func writeInt64(h hash.Hash, v int64) {
	var b [8]byte
	binary.BigEndian.PutUint64(b[:], uint64(v))
	h.Write(b[:])
}
