package fsm

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"math"
	"slices"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	"google.golang.org/protobuf/encoding/protowire"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/reflect/protoreflect"
	"google.golang.org/protobuf/types/known/timestamppb"

	"github.com/sepp-io/sepp/engine"
	seppv1 "github.com/sepp-io/sepp/proto/sepp/v1"
	cmdpb "github.com/sepp-io/sepp/proto/seppcmd/v1"
)

// hotEnqueueItems are n items of the shape `sepp bench produce` enqueues.
func hotEnqueueItems(n int) []*seppv1.EnqueueRequest {
	payload := make([]byte, 256)
	for i := range payload {
		payload[i] = byte(i)
	}
	items := make([]*seppv1.EnqueueRequest, n)
	for i := range items {
		items[i] = &seppv1.EnqueueRequest{Queue: "bench", JobType: "bench.job", Payload: payload, IdempotencyKey: fmt.Sprintf("%032x", i)}
	}
	return items
}

// batchCmd is a JobEnqueueBatch of requests in the public form
// (CommandVersionPublicEnqueue), stamped with t0.
func batchCmd(items ...*seppv1.EnqueueRequest) *cmdpb.Command {
	return &cmdpb.Command{Version: CommandVersionPublicEnqueue, NowUnixNano: t0.UnixNano(), Op: &cmdpb.Command_JobEnqueueBatch{JobEnqueueBatch: &cmdpb.JobEnqueueBatch{Requests: items}}}
}

// ts is a Timestamp message of seconds and nanos, whatever their range.
func ts(seconds int64, nanos int32) *timestamppb.Timestamp {
	return &timestamppb.Timestamp{Seconds: seconds, Nanos: nanos}
}

// withUnknown returns m with an unknown field (number 99) appended.
func withUnknown[M proto.Message](m M) M {
	b := protowire.AppendTag(nil, 99, protowire.VarintType)
	m.ProtoReflect().SetUnknown(protowire.AppendVarint(b, 7))
	return m
}

func u32(v uint32) *uint32 { return &v }

// checkEncodeSame asserts that EncodeEntry writes encodeEntryGeneral's
// bytes, or fails as it does, that encodeEntryFast takes the entry exactly
// when wantFast, and that what it writes decodes back to cmds (through
// DecodeEntry too when decodable: versions 1..2 only).
func checkEncodeSame(t *testing.T, cmds []*cmdpb.Command, wantFast, decodable bool) {
	t.Helper()
	want, wantErr := encodeEntryGeneral(cmds)
	got, err := EncodeEntry(cmds)
	if (err == nil) != (wantErr == nil) {
		t.Fatalf("EncodeEntry error %v, general %v", err, wantErr)
	}
	if !bytes.Equal(got, want) {
		t.Fatalf("EncodeEntry and general differ:\n got %x\nwant %x", got, want)
	}
	fast, ok := encodeEntryFast(cmds)
	if ok != wantFast {
		t.Fatalf("encodeEntryFast took the entry: %v, want %v", ok, wantFast)
	}
	if !ok {
		return
	}
	if wantErr != nil {
		t.Fatalf("fast path encoded an entry the general one refuses: %v", wantErr)
	}
	if !bytes.Equal(fast, want) {
		t.Fatalf("fast and general differ:\n fast %x\n want %x", fast, want)
	}
	if len(fast) != cap(fast) {
		t.Fatalf("fast buffer len %d cap %d: not sized exactly", len(fast), cap(fast))
	}
	body, err := entryBody(fast)
	if err != nil {
		t.Fatal(err)
	}
	var back cmdpb.Entry
	if err := proto.Unmarshal(body, &back); err != nil {
		t.Fatal(err)
	}
	if in := (&cmdpb.Entry{FormatVersion: EntryFormatVersion, Commands: cmds}); !proto.Equal(&back, in) {
		t.Fatalf("decoded entry differs from the encoded one")
	}
	if decodable {
		if _, err := DecodeEntry(fast); err != nil {
			t.Fatalf("DecodeEntry: %v", err)
		}
	}
}

func TestEncodeEntryFast_SameBytes(t *testing.T) {
	hex := fmt.Sprintf("%032x", 0xdeadbeef)
	item := func(f func(*seppv1.EnqueueRequest)) *seppv1.EnqueueRequest {
		p := &seppv1.EnqueueRequest{Queue: "q", JobType: "t", Payload: []byte("p"), IdempotencyKey: hex}
		f(p)
		return p
	}
	noNow := batchCmd(hotEnqueueItems(2)...)
	noNow.NowUnixNano = 0
	negNow := batchCmd(hotEnqueueItems(1)...)
	negNow.NowUnixNano = -1
	v0 := batchCmd(hotEnqueueItems(1)...)
	v0.Version = 0
	v2 := batchCmd(hotEnqueueItems(1)...)
	v2.Version = CommandVersionAckBatch
	nilBatch := batchCmd()
	nilBatch.Op = &cmdpb.Command_JobEnqueueBatch{}
	noOp := batchCmd()
	noOp.Op = nil
	unknownBatch := batchCmd(hotEnqueueItems(1)...)
	withUnknown(unknownBatch.GetJobEnqueueBatch())

	tests := []struct {
		name      string
		cmds      []*cmdpb.Command
		wantFast  bool
		decodable bool
	}{
		{"no commands", nil, true, true},
		{"empty batch", []*cmdpb.Command{batchCmd()}, true, true},
		{"empty non-nil items", []*cmdpb.Command{batchCmd([]*seppv1.EnqueueRequest{}...)}, true, true},
		{"1 hot item", []*cmdpb.Command{batchCmd(hotEnqueueItems(1)...)}, true, true},
		{"256 hot items", []*cmdpb.Command{batchCmd(hotEnqueueItems(256)...)}, true, true},
		{"empty item", []*cmdpb.Command{batchCmd(&seppv1.EnqueueRequest{})}, true, true},
		{"priority nil", []*cmdpb.Command{batchCmd(item(func(p *seppv1.EnqueueRequest) { p.Priority = nil }))}, true, true},
		{"priority 0", []*cmdpb.Command{batchCmd(item(func(p *seppv1.EnqueueRequest) { p.Priority = u32(0) }))}, true, true},
		{"priority 9", []*cmdpb.Command{batchCmd(item(func(p *seppv1.EnqueueRequest) { p.Priority = u32(9) }))}, true, true},
		{"priority max", []*cmdpb.Command{batchCmd(item(func(p *seppv1.EnqueueRequest) { p.Priority = u32(math.MaxUint32) }))}, true, true},
		{"scheduled", []*cmdpb.Command{batchCmd(item(func(p *seppv1.EnqueueRequest) { p.ScheduledAt = timestamppb.New(t0) }))}, true, true},
		{"scheduled at the epoch (an empty message)", []*cmdpb.Command{batchCmd(item(func(p *seppv1.EnqueueRequest) { p.ScheduledAt = ts(0, 0) }))}, true, true},
		{"scheduled nanos only", []*cmdpb.Command{batchCmd(item(func(p *seppv1.EnqueueRequest) { p.ScheduledAt = ts(0, 999_999_999) }))}, true, true},
		{"scheduled negative", []*cmdpb.Command{batchCmd(item(func(p *seppv1.EnqueueRequest) { p.ScheduledAt = ts(math.MinInt64, math.MinInt32) }))}, true, true},
		{"scheduled max", []*cmdpb.Command{batchCmd(item(func(p *seppv1.EnqueueRequest) { p.ScheduledAt = ts(math.MaxInt64, math.MaxInt32) }))}, true, true},
		{"scheduled unknown field", []*cmdpb.Command{batchCmd(item(func(p *seppv1.EnqueueRequest) { p.ScheduledAt = withUnknown(ts(1, 2)) }))}, false, true},
		{"max attempts 1", []*cmdpb.Command{batchCmd(item(func(p *seppv1.EnqueueRequest) { p.MaxAttempts = 1 }))}, true, true},
		{"max attempts max", []*cmdpb.Command{batchCmd(item(func(p *seppv1.EnqueueRequest) { p.MaxAttempts = math.MaxUint32 }))}, true, true},
		{"key empty", []*cmdpb.Command{batchCmd(item(func(p *seppv1.EnqueueRequest) { p.IdempotencyKey = "" }))}, true, true},
		{"key long", []*cmdpb.Command{batchCmd(item(func(p *seppv1.EnqueueRequest) { p.IdempotencyKey = strings.Repeat("k", 300) }))}, true, true},
		{"key multibyte", []*cmdpb.Command{batchCmd(item(func(p *seppv1.EnqueueRequest) { p.IdempotencyKey = "clé-🔑" }))}, true, true},
		{"payload nil", []*cmdpb.Command{batchCmd(item(func(p *seppv1.EnqueueRequest) { p.Payload = nil }))}, true, true},
		{"traced", []*cmdpb.Command{batchCmd(item(func(p *seppv1.EnqueueRequest) {
			p.TraceContext = &seppv1.TraceContext{Traceparent: "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01", Tracestate: "congo=t61rcWkgMzE"}
		}))}, true, true},
		{"traced, no tracestate", []*cmdpb.Command{batchCmd(item(func(p *seppv1.EnqueueRequest) {
			p.TraceContext = &seppv1.TraceContext{Traceparent: "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"}
		}))}, true, true},
		{"trace context empty", []*cmdpb.Command{batchCmd(item(func(p *seppv1.EnqueueRequest) { p.TraceContext = &seppv1.TraceContext{} }))}, true, true},
		{"tracestate long", []*cmdpb.Command{batchCmd(item(func(p *seppv1.EnqueueRequest) {
			p.TraceContext = &seppv1.TraceContext{Traceparent: "x", Tracestate: strings.Repeat("s", 300)}
		}))}, true, true},
		{"traceparent invalid UTF-8", []*cmdpb.Command{batchCmd(item(func(p *seppv1.EnqueueRequest) { p.TraceContext = &seppv1.TraceContext{Traceparent: "\xff"} }))}, false, false},
		{"trace context unknown field", []*cmdpb.Command{batchCmd(item(func(p *seppv1.EnqueueRequest) {
			p.TraceContext = &seppv1.TraceContext{Traceparent: "x"}
			withUnknown(p.TraceContext)
		}))}, false, true},
		{"payload empty", []*cmdpb.Command{batchCmd(item(func(p *seppv1.EnqueueRequest) { p.Payload = []byte{} }))}, true, true},
		{"payload 2 MiB", []*cmdpb.Command{batchCmd(item(func(p *seppv1.EnqueueRequest) { p.Payload = bytes.Repeat([]byte{0xab}, 2<<20) }))}, true, true},
		{"payload invalid utf-8", []*cmdpb.Command{batchCmd(item(func(p *seppv1.EnqueueRequest) { p.Payload = []byte{0xff, 0xfe} }))}, true, true},
		{"custom", []*cmdpb.Command{batchCmd(item(func(p *seppv1.EnqueueRequest) {
			p.Custom = map[string]string{"b": "2", "a": "1", "": "", "ab": "", "é": "x", "B": strings.Repeat("v", 200)}
		}))}, true, true},
		{"every field", []*cmdpb.Command{batchCmd(item(func(p *seppv1.EnqueueRequest) {
			p.Priority, p.ScheduledAt, p.MaxAttempts, p.Custom = u32(3), ts(12345, 6789), 5, map[string]string{"k": "v"}
		}))}, true, true},
		{"multiple commands", []*cmdpb.Command{batchCmd(hotEnqueueItems(3)...), batchCmd(), batchCmd(hotEnqueueItems(256)...)}, true, true},
		{"more commands than the stack sizes", func() []*cmdpb.Command {
			cmds := make([]*cmdpb.Command, 20)
			for i := range cmds {
				cmds[i] = batchCmd(hotEnqueueItems(i % 3)...)
			}
			return cmds
		}(), true, true},
		{"now 0", []*cmdpb.Command{noNow}, true, true},
		{"now negative", []*cmdpb.Command{negNow}, true, true},
		{"version 0", []*cmdpb.Command{v0}, true, false},
		{"version 2", []*cmdpb.Command{v2}, true, true},

		// Left to the general path, which must still be what EncodeEntry writes.
		{"mixed with tick", stamped(t0, batchCmd(hotEnqueueItems(2)...), TickCommand()), false, true},
		{"only another op", stamped(t0, AckBatchCommand([]engine.LeaseRef{{JobID: 1, LeaseToken: 2}})), false, true},
		{"single enqueue", stamped(t0, EnqueueCommand(engine.EnqueueParams{Queue: "q"})), false, true},
		{"older form", stamped(t0, EnqueueBatchCommand([]engine.EnqueueParams{{Queue: "q", JobType: "t"}})), false, true},
		{"unique", []*cmdpb.Command{batchCmd(item(func(p *seppv1.EnqueueRequest) { p.Unique = &seppv1.UniqueOptions{Key: "u"} }))}, false, true},
		{"ttl", []*cmdpb.Command{batchCmd(item(func(p *seppv1.EnqueueRequest) { p.TtlMs = 5 }))}, false, true},
		{"expires at", []*cmdpb.Command{batchCmd(item(func(p *seppv1.EnqueueRequest) { p.ExpiresAt = timestamppb.New(t0) }))}, false, true},
		{"nil command", []*cmdpb.Command{batchCmd(), nil}, false, false},
		{"nil batch", []*cmdpb.Command{nilBatch}, false, true},
		{"no op", []*cmdpb.Command{noOp}, false, false},
		{"nil item", []*cmdpb.Command{batchCmd(hotEnqueueItems(1)[0], nil)}, false, true},
		{"unknown field on command", []*cmdpb.Command{withUnknown(batchCmd(hotEnqueueItems(1)...))}, false, true},
		{"unknown field on batch", []*cmdpb.Command{unknownBatch}, false, true},
		{"unknown field on item", []*cmdpb.Command{batchCmd(withUnknown(item(func(*seppv1.EnqueueRequest) {})))}, false, true},
		{"invalid utf-8 queue", []*cmdpb.Command{batchCmd(item(func(p *seppv1.EnqueueRequest) { p.Queue = "q\xff" }))}, false, false},
		{"invalid utf-8 queue after valid ones", []*cmdpb.Command{batchCmd(append(hotEnqueueItems(3), item(func(p *seppv1.EnqueueRequest) { p.Queue = "bench\xff" }))...)}, false, false},
		{"invalid utf-8 job type after valid ones", []*cmdpb.Command{batchCmd(hotEnqueueItems(2)...), batchCmd(item(func(p *seppv1.EnqueueRequest) { p.JobType = "bench.job\xff" }))}, false, false},
		{"queues and job types change", []*cmdpb.Command{batchCmd(append(hotEnqueueItems(2), item(func(p *seppv1.EnqueueRequest) { p.Queue, p.JobType = "", "" }), item(func(*seppv1.EnqueueRequest) {}))...)}, true, true},
		{"invalid utf-8 job type", []*cmdpb.Command{batchCmd(item(func(p *seppv1.EnqueueRequest) { p.JobType = "\xc3" }))}, false, false},
		{"invalid utf-8 key", []*cmdpb.Command{batchCmd(item(func(p *seppv1.EnqueueRequest) { p.IdempotencyKey = "\x80" }))}, false, false},
		{"invalid utf-8 custom key", []*cmdpb.Command{batchCmd(item(func(p *seppv1.EnqueueRequest) { p.Custom = map[string]string{"\xff": "v"} }))}, false, false},
		{"invalid utf-8 custom value", []*cmdpb.Command{batchCmd(item(func(p *seppv1.EnqueueRequest) { p.Custom = map[string]string{"k": "\xff"} }))}, false, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			checkEncodeSame(t, tt.cmds, tt.wantFast, tt.decodable)
		})
	}
}

// TestEncodeEntryFast_OneAllocation: the usual entry costs its output
// buffer and nothing else.
func TestEncodeEntryFast_OneAllocation(t *testing.T) {
	cmds := []*cmdpb.Command{batchCmd(hotEnqueueItems(256)...)}
	if n := testing.AllocsPerRun(20, func() {
		if _, err := EncodeEntry(cmds); err != nil {
			t.Fatal(err)
		}
	}); n != 1 {
		t.Fatalf("EncodeEntry of 256 enqueues: %v allocations, want 1", n)
	}
}

// fuzzInput hands out values drawn from fuzz bytes, zeros once they run out.
type fuzzInput struct{ b []byte }

func (r *fuzzInput) byte() byte {
	if len(r.b) == 0 {
		return 0
	}
	c := r.b[0]
	r.b = r.b[1:]
	return c
}

func (r *fuzzInput) uint64() uint64 {
	var buf [8]byte
	for i := range buf {
		buf[i] = r.byte()
	}
	return binary.LittleEndian.Uint64(buf[:])
}

// bytes returns up to max bytes, nil-free: an empty result is non-nil.
func (r *fuzzInput) bytes(max int) []byte {
	n := min(int(r.byte())%(max+1), len(r.b))
	out := append([]byte{}, r.b[:n]...)
	r.b = r.b[n:]
	return out
}

// fuzzEntry builds commands from fuzz input, mostly enqueue batches, and
// says whether encodeEntryFast must take them and, if it does, whether
// DecodeEntry accepts them (their versions are 1..CommandVersion).
func fuzzEntry(r *fuzzInput) (cmds []*cmdpb.Command, fast, decodable bool) {
	fast, decodable = true, true
	for range int(r.byte() % 4) {
		kind := r.byte()
		switch kind % 16 {
		case 0:
			cmds = append(cmds, stamped(t0, TickCommand())...)
			fast = false
			continue
		case 1:
			cmds = append(cmds, nil)
			fast, decodable = false, false
			continue
		}
		c := batchCmd()
		switch v := r.byte() % 8; v {
		case 0:
			c.Version, decodable = 0, false
		case 1:
			c.Version = CommandVersionAckBatch
		case 2:
			c.Version, decodable = max(CommandVersion+1, uint32(r.uint64())), false
		}
		switch r.byte() % 4 {
		case 0:
			c.NowUnixNano = 0
		case 1:
			c.NowUnixNano = int64(r.uint64())
		}
		batch := c.GetJobEnqueueBatch()
		switch kind % 16 {
		case 2:
			c.Op = &cmdpb.Command_JobEnqueueBatch{}
			fast = false
		case 3:
			withUnknown(c)
			fast = false
		case 4:
			withUnknown(batch)
			fast = false
		case 5:
			batch.Requests = hotEnqueueItems(256)
		}
		for range int(r.byte() % 6) {
			it, itFast := fuzzItem(r)
			batch.Requests = append(batch.Requests, it)
			fast = fast && itFast
		}
		cmds = append(cmds, c)
	}
	return cmds, fast, decodable
}

// fuzzItem builds one item and says whether encodeEntryFast must take it.
func fuzzItem(r *fuzzInput) (*seppv1.EnqueueRequest, bool) {
	fl := r.byte()
	if fl == 0xff {
		return nil, false
	}
	str := func(max int) string {
		s := string(r.bytes(max))
		if fl&0x40 == 0 {
			s = strings.ToValidUTF8(s, "?")
		}
		return s
	}
	p := &seppv1.EnqueueRequest{Queue: str(8), JobType: str(8)}
	if fl&2 == 0 {
		p.Payload = r.bytes(64)
	}
	if fl&4 != 0 {
		p.Priority = u32(uint32(r.uint64() >> (r.byte() % 64)))
	}
	if fl&8 != 0 {
		p.ScheduledAt = ts(int64(r.uint64()>>(r.byte()%64)), int32(r.uint64()))
	}
	if fl&16 != 0 {
		p.MaxAttempts = uint32(r.uint64() >> (r.byte() % 64))
	}
	if fl&32 != 0 {
		p.Custom = map[string]string{}
		for range int(r.byte() % 4) {
			p.Custom[str(6)] = str(6)
		}
	}
	p.IdempotencyKey = str(40)
	if fl&1 != 0 && fl&0x80 == 0 {
		p.TraceContext = &seppv1.TraceContext{Traceparent: str(60), Tracestate: str(20)}
	}
	ok := utf8.ValidString(p.Queue) && utf8.ValidString(p.JobType) && utf8.ValidString(p.IdempotencyKey)
	if t := p.TraceContext; t != nil {
		ok = ok && utf8.ValidString(t.Traceparent) && utf8.ValidString(t.Tracestate)
	}
	for k, v := range p.Custom {
		ok = ok && utf8.ValidString(k) && utf8.ValidString(v)
	}
	if fl&0x80 != 0 && fl&1 != 0 {
		withUnknown(p)
		ok = false
	}
	return p, ok
}

// FuzzEncodeEnqueueEntry: on entries of enqueue batches and near them,
// EncodeEntry writes exactly encodeEntryGeneral's bytes (or fails as it
// does), encodeEntryFast takes every entry of the shape it handles, and
// its bytes decode to the commands encoded.
//
//	go test -run '^$' -fuzz FuzzEncodeEnqueueEntry -fuzztime 60s ./fsm/
func FuzzEncodeEnqueueEntry(f *testing.F) {
	f.Add([]byte{})
	f.Add([]byte{1, 6, 1, 1, 1, 0x3c, 5, 'q', 'u', 'e', 'u', 'e', 3, 'j', 'o', 'b', 4, 1, 2, 3, 4, 9, 0, 0, 0, 0, 0, 0, 0, 0, 2, 0, 1, 2, 3, 4, 5, 6, 7, 8, 60, 1, 2, 'k', 1, 'v', 32})
	f.Add([]byte{3, 0, 5, 1, 1, 0, 6, 0x7f, 2, 0xff, 0xfe, 1, 'x', 0xff})
	f.Add([]byte{2, 5, 2, 0, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 3, 0xc4, 1, 0xc3, 1, 0xff, 0x80, 3, 'a', 'b', 'c'})
	f.Fuzz(func(t *testing.T, data []byte) {
		cmds, fast, decodable := fuzzEntry(&fuzzInput{b: data})
		checkEncodeSame(t, cmds, fast, decodable && fast)
	})
}

// BenchmarkEncodeEnqueueEntry is BenchmarkEncodeEnqueueBatch's encoding
// alone: a built 256-item JobEnqueueBatch of the bench shape encoded by
// protobuf ("general") and by EncodeEntry ("fast").
//
//	go test -run '^$' -bench 'EncodeEnqueue' -benchmem ./fsm/
func BenchmarkEncodeEnqueueEntry(b *testing.B) {
	cmds := []*cmdpb.Command{batchCmd(hotEnqueueItems(256)...)}
	for _, enc := range []struct {
		name   string
		encode func([]*cmdpb.Command) ([]byte, error)
	}{
		{"general", encodeEntryGeneral},
		{"fast", EncodeEntry},
	} {
		b.Run(enc.name, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				data, err := enc.encode(cmds)
				if err != nil {
					b.Fatal(err)
				}
				entrySink = data
			}
		})
	}
}

// TestEncodeEntryFast_KnowsEveryRequestField: for every field of
// EnqueueRequest set alone, encodeEntryFast either declines the entry or
// writes exactly protobuf's bytes. A field added to the public request
// declines the entry through fieldsBut's rest; this fails, naming the
// field, if the fast encoder is taught one and writes it wrong, or if a
// field it declines directly is taken out of the rest without the check.
func TestEncodeEntryFast_KnowsEveryRequestField(t *testing.T) {
	fields := (&seppv1.EnqueueRequest{}).ProtoReflect().Descriptor().Fields()
	for i := range fields.Len() {
		fd := fields.Get(i)
		t.Run(string(fd.Name()), func(t *testing.T) {
			r := &seppv1.EnqueueRequest{Queue: "q"}
			m := r.ProtoReflect()
			switch {
			case fd.IsMap():
				m.Mutable(fd).Map().Set(protoreflect.ValueOfString("k").MapKey(), protoreflect.ValueOfString("v"))
			case fd.IsList():
				m.Mutable(fd).List().Append(sampleValue(t, fd, m))
			case fd.Message() != nil:
				m.Mutable(fd) // present, empty
			default:
				m.Set(fd, sampleValue(t, fd, m))
			}
			cmds := []*cmdpb.Command{batchCmd(r)}
			fast, ok := encodeEntryFast(cmds)
			if !ok {
				return
			}
			want, err := encodeEntryGeneral(cmds)
			if err != nil {
				t.Fatal(err)
			}
			if !bytes.Equal(fast, want) {
				t.Fatalf("encodeEntryFast writes field %s differently from protobuf (or not at all): check what it writes, and that fieldsBut leaves the field in the rest when nothing declines it directly", fd.FullName())
			}
		})
	}
}

// TestEncodeEntryFast_DeclinesAFieldItWasNotTaught: a field of a message
// that the fast encoder neither writes nor declines directly (a field added
// to the proto after it was written) makes it decline the entry once set,
// through the reflective check of fieldsBut's rest, so the entry reaches the
// log through protobuf with the field. Here each field it declines directly
// stands in for such a field: taken out of the handled numbers, it lands in
// the rest, and writesAll refuses a request that sets it.
func TestEncodeEntryFast_DeclinesAFieldItWasNotTaught(t *testing.T) {
	written := []protowire.Number{1, 2, 3, 4, 5, 6, 7, 8, enqueueTraceField}
	for _, tc := range []struct {
		name string
		num  protowire.Number
		set  func(*seppv1.EnqueueRequest)
	}{
		{"unique", 110, func(r *seppv1.EnqueueRequest) { r.Unique = &seppv1.UniqueOptions{} }},
		{"expires_at", 140, func(r *seppv1.EnqueueRequest) { r.ExpiresAt = timestamppb.New(time.Unix(1, 0)) }},
		{"ttl_ms", 141, func(r *seppv1.EnqueueRequest) { r.TtlMs = 5 }},
		{"after", 180, func(r *seppv1.EnqueueRequest) { r.After = []uint32{0} }},
		{"on_parent_failure", 181, func(r *seppv1.EnqueueRequest) {
			r.OnParentFailure = seppv1.ParentFailurePolicy_PARENT_FAILURE_POLICY_RUN
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var handled []protowire.Number
			handled = append(handled, written...)
			for _, n := range []protowire.Number{110, 140, 141, 180, 181} {
				if n != tc.num {
					handled = append(handled, n)
				}
			}
			rest := fieldsBut((*seppv1.EnqueueRequest)(nil), handled...)
			// The rest also holds any field added since, which r leaves unset.
			if !slices.ContainsFunc(rest, func(fd protoreflect.FieldDescriptor) bool { return fd.Number() == tc.num }) {
				t.Fatalf("fieldsBut left %v, without field %d", rest, tc.num)
			}
			r := &seppv1.EnqueueRequest{Queue: "q", Payload: []byte("p")}
			if !writesAll(r.ProtoReflect(), rest) {
				t.Fatalf("writesAll refuses a request without %s", tc.name)
			}
			tc.set(r)
			if writesAll(r.ProtoReflect(), rest) {
				t.Fatalf("writesAll takes a request with %s set, which the fast encoder would leave out", tc.name)
			}
		})
	}
	// fastEnqueueRequest consults the rest: with idempotency_key (which it
	// writes) put there, a request that sets a key is declined.
	t.Run("wired", func(t *testing.T) {
		saved := fastEnqueueRequestRest
		t.Cleanup(func() { fastEnqueueRequestRest = saved })
		fastEnqueueRequestRest = fieldsBut((*seppv1.EnqueueRequest)(nil), 1, 2, 3, 4, 5, 6, 7, enqueueTraceField, 110, 140, 141, 180, 181)
		if _, ok := encodeEntryFast([]*cmdpb.Command{batchCmd(&seppv1.EnqueueRequest{Queue: "q"})}); !ok {
			t.Fatal("encodeEntryFast declines a request that sets nothing in the rest")
		}
		if _, ok := encodeEntryFast([]*cmdpb.Command{batchCmd(&seppv1.EnqueueRequest{Queue: "q", IdempotencyKey: "k"})}); ok {
			t.Fatal("encodeEntryFast takes a request that sets a field of the rest")
		}
	})
	// The members of Command's op are not in its rest: the op's case is
	// found by its type.
	for _, fd := range fastCommandRest {
		if o := fd.ContainingOneof(); o != nil && !o.IsSynthetic() {
			t.Errorf("Command's rest holds %s, a member of the oneof %s", fd.Name(), o.Name())
		}
	}
}

// sampleValue is a non-zero value of a scalar field (or a list's element).
func sampleValue(t *testing.T, fd protoreflect.FieldDescriptor, m protoreflect.Message) protoreflect.Value {
	t.Helper()
	switch fd.Kind() {
	case protoreflect.StringKind:
		return protoreflect.ValueOfString("s")
	case protoreflect.BytesKind:
		return protoreflect.ValueOfBytes([]byte("b"))
	case protoreflect.BoolKind:
		return protoreflect.ValueOfBool(true)
	case protoreflect.Uint32Kind, protoreflect.Fixed32Kind:
		return protoreflect.ValueOfUint32(7)
	case protoreflect.Uint64Kind, protoreflect.Fixed64Kind:
		return protoreflect.ValueOfUint64(7)
	case protoreflect.Int32Kind, protoreflect.Sint32Kind, protoreflect.Sfixed32Kind:
		return protoreflect.ValueOfInt32(7)
	case protoreflect.Int64Kind, protoreflect.Sint64Kind, protoreflect.Sfixed64Kind:
		return protoreflect.ValueOfInt64(7)
	case protoreflect.EnumKind:
		return protoreflect.ValueOfEnum(1)
	case protoreflect.MessageKind:
		return m.NewField(fd)
	}
	t.Fatalf("field %s: no sample value for kind %v", fd.FullName(), fd.Kind())
	return protoreflect.Value{}
}
