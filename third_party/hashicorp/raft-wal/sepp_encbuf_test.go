package wal

// Tests of the SEPP PATCH of StoreLogs: the reused encode buffer (SEPP-PATCH.md).

import (
	"bytes"
	"fmt"
	"io"
	"syscall"
	"testing"
	"time"

	"github.com/hashicorp/raft"
	"github.com/stretchr/testify/require"
)

// seppLog is entry i of the patch's tests: its size varies with i, so
// consecutive appends through the shared encode buffer differ in length.
func seppLog(i uint64, size int) *raft.Log {
	data := bytes.Repeat([]byte{byte(i)}, size)
	copy(data, fmt.Sprintf("entry %d;", i))
	return &raft.Log{
		Index:      i,
		Term:       i/100 + 1,
		Type:       raft.LogCommand,
		Data:       data,
		Extensions: []byte(fmt.Sprintf("ext %d", i)),
		AppendedAt: time.Unix(1700000000, int64(i)).UTC(),
	}
}

// TestSeppStoreLogsReusesEncodeBuffer writes batches of mixed sizes through
// the real segment files (one batch larger than the kept buffer, entries
// larger than the size hint's slack, multi-entry batches, segment
// rotations) and reads every entry back: the shared encode buffer must not
// leak one append's bytes into another's entries.
func TestSeppStoreLogsReusesEncodeBuffer(t *testing.T) {
	t.Run("binary codec", func(t *testing.T) { testSeppStoreLogs(t) })
	// A codec writing more than encodedSizeHint makes the buffer grow in
	// the middle of a batch, which moves it.
	t.Run("codec beyond the size hint", func(t *testing.T) { testSeppStoreLogs(t, WithCodec(paddingCodec{})) })
}

// paddingCodec is BinaryCodec followed by 4 KiB of padding, so what it
// writes exceeds encodedSizeHint.
type paddingCodec struct{ BinaryCodec }

const paddingLen = 4096

func (paddingCodec) ID() uint64 { return FirstExternalCodecID }

func (c paddingCodec) Encode(l *raft.Log, w io.Writer) error {
	if err := c.BinaryCodec.Encode(l, w); err != nil {
		return err
	}
	_, err := w.Write(make([]byte, paddingLen))
	return err
}

func (c paddingCodec) Decode(bs []byte, l *raft.Log) error {
	return c.BinaryCodec.Decode(bs[:len(bs)-paddingLen], l)
}

func testSeppStoreLogs(t *testing.T, opts ...walOpt) {
	w, err := Open(t.TempDir(), append([]walOpt{WithSegmentSize(256 * 1024)}, opts...)...)
	require.NoError(t, err)
	defer w.Close()

	sizes := func(i uint64) int {
		switch {
		case i == 40:
			return maxKeptEncodeBuf + 1 // a batch the WAL must not keep
		case i%7 == 0:
			return 80 * 1024
		default:
			return int(i*37) % 3000
		}
	}
	var next uint64 = 1
	batch := []int{1, 3, 1, 16, 2, 1, 5, 1, 1, 8}
	for round := 0; round < 6; round++ {
		for _, n := range batch {
			logs := make([]*raft.Log, n)
			for k := range logs {
				logs[k] = seppLog(next, sizes(next))
				next++
			}
			require.NoError(t, w.StoreLogs(logs))
			require.LessOrEqual(t, cap(w.encodeBuf), maxKeptEncodeBuf, "kept encode buffer")
		}
	}

	last, err := w.LastIndex()
	require.NoError(t, err)
	require.Equal(t, next-1, last)
	for i := uint64(1); i < next; i++ {
		var got raft.Log
		require.NoError(t, w.GetLog(i, &got))
		want := seppLog(i, sizes(i))
		require.Equal(t, want.Index, got.Index)
		require.Equal(t, want.Term, got.Term)
		require.Equal(t, want.Type, got.Type)
		require.True(t, bytes.Equal(want.Data, got.Data), "data of entry %d", i)
		require.Equal(t, want.Extensions, got.Extensions)
		require.True(t, want.AppendedAt.Equal(got.AppendedAt), "time of entry %d", i)
	}
}

// BenchmarkSeppStoreLogs80K appends one 80 KiB entry per call, the size of
// a 256-job sepp batch; cpu-ns/op is the process's user and system time.
// Upstream's per-entry bytes.Buffer showed as ~91 KB and 9 allocs per op.
func BenchmarkSeppStoreLogs80K(b *testing.B) {
	w, err := Open(b.TempDir())
	if err != nil {
		b.Fatal(err)
	}
	defer w.Close()
	data := make([]byte, 80*1024)
	b.ReportAllocs()
	b.SetBytes(int64(len(data)))
	var r0, r1 syscall.Rusage
	syscall.Getrusage(syscall.RUSAGE_SELF, &r0)
	b.ResetTimer()
	for i := 1; i <= b.N; i++ {
		if err := w.StoreLogs([]*raft.Log{{Index: uint64(i), Term: 1, Data: data}}); err != nil {
			b.Fatal(err)
		}
	}
	b.StopTimer()
	syscall.Getrusage(syscall.RUSAGE_SELF, &r1)
	cpu := r1.Utime.Nano() - r0.Utime.Nano() + r1.Stime.Nano() - r0.Stime.Nano()
	b.ReportMetric(float64(cpu)/float64(b.N), "cpu-ns/op")
}
