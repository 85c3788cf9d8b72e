package fsm

import (
	"fmt"

	"google.golang.org/protobuf/encoding/protowire"
	"google.golang.org/protobuf/reflect/protoreflect"

	cmdpb "github.com/sepp-io/sepp/proto/seppcmd/v1"
)

// CheckEntry answers, for a whole log at start, whether this binary can
// apply an entry, at a fraction of DecodeEntry's cost: it verifies the
// checksum, the entry's format version and, per command, the command
// version and that its operation is one this binary knows, walking the
// protobuf wire format without decoding the operations' bodies (no
// allocation). A version 1 entry, which has no checksum, is decoded in full.
//
// It accepts every entry DecodeEntry accepts, and rejects every entry that
// DecodeEntry rejects for a bad checksum, frame, format version, command
// version or unknown operation. What it does not look into is the body of
// a known operation: a version 2 entry with an intact checksum was written by
// EncodeEntry, whose protobuf marshalling cannot produce a body that does
// not parse, so such a body would mean a bug of the writer, and Apply would
// still stop on it with its log index.
//
// A node decodes every entry twice at start otherwise: once to verify the
// log, and once to apply it; for a million waiting jobs in the log the first
// decode is more than a second of the restart.
func CheckEntry(data []byte) error {
	body, err := entryBody(data)
	if err != nil {
		return err
	}
	if data[0] != entryFrameV2 {
		_, err := DecodeEntry(data)
		return err
	}
	var formatVersion uint32
	cmds := 0
	for b := body; len(b) > 0; {
		num, typ, n := protowire.ConsumeTag(b)
		if n < 0 {
			return fmt.Errorf("%w: %w", ErrDecode, protowire.ParseError(n))
		}
		b = b[n:]
		switch {
		case num == 1 && typ == protowire.VarintType: // format_version
			v, n := protowire.ConsumeVarint(b)
			if n < 0 {
				return fmt.Errorf("%w: %w", ErrDecode, protowire.ParseError(n))
			}
			formatVersion = uint32(v)
			b = b[n:]
		case num == 2 && typ == protowire.BytesType: // commands
			v, n := protowire.ConsumeBytes(b)
			if n < 0 {
				return fmt.Errorf("%w: %w", ErrDecode, protowire.ParseError(n))
			}
			if err := checkCommand(cmds, v); err != nil {
				return err
			}
			cmds++
			b = b[n:]
		default:
			n := protowire.ConsumeFieldValue(num, typ, b)
			if n < 0 {
				return fmt.Errorf("%w: %w", ErrDecode, protowire.ParseError(n))
			}
			b = b[n:]
		}
	}
	if formatVersion != EntryFormatVersion {
		return fmt.Errorf("%w: framed entry says format version %d, want %d", ErrDecode, formatVersion, EntryFormatVersion)
	}
	return nil
}

// knownOps maps the field numbers of Command's op oneof to the command
// version that introduced each (opVersion, by field number).
var knownOps = func() map[protowire.Number]uint32 {
	ops := make(map[protowire.Number]uint32)
	fields := (&cmdpb.Command{}).ProtoReflect().Descriptor().Oneofs().ByName("op").Fields()
	for i := 0; i < fields.Len(); i++ {
		if f := fields.Get(i); f.Kind() == protoreflect.MessageKind {
			ops[f.Number()] = opVersion(opOfField(f))
		}
	}
	return ops
}()

// opOfField is an empty value of the oneof wrapper of field f, for
// opVersion: the one table of versions serves both DecodeEntry and
// CheckEntry.
func opOfField(f protoreflect.FieldDescriptor) any {
	m := (&cmdpb.Command{}).ProtoReflect()
	m.Set(f, m.NewField(f))
	return m.Interface().(*cmdpb.Command).GetOp()
}

// checkCommand is CheckEntry for one Command message: as protobuf decodes
// it, the last version wins, an operation field counts only with the wire
// type of a message, and of several operation fields the last one wins.
func checkCommand(i int, b []byte) error {
	var version uint32
	hasOp := false
	var opSince uint32
	for len(b) > 0 {
		num, typ, n := protowire.ConsumeTag(b)
		if n < 0 {
			return fmt.Errorf("%w: command %d: %w", ErrDecode, i, protowire.ParseError(n))
		}
		b = b[n:]
		if num == 1 && typ == protowire.VarintType {
			v, n := protowire.ConsumeVarint(b)
			if n < 0 {
				return fmt.Errorf("%w: command %d: %w", ErrDecode, i, protowire.ParseError(n))
			}
			version = uint32(v)
			b = b[n:]
			continue
		}
		if since, ok := knownOps[num]; ok && typ == protowire.BytesType {
			hasOp, opSince = true, since
		}
		n = protowire.ConsumeFieldValue(num, typ, b)
		if n < 0 {
			return fmt.Errorf("%w: command %d: %w", ErrDecode, i, protowire.ParseError(n))
		}
		b = b[n:]
	}
	if version < 1 || version > CommandVersion {
		return fmt.Errorf("%w: command %d has version %d, this binary applies 1..%d", ErrDecode, i, version, CommandVersion)
	}
	if !hasOp {
		return fmt.Errorf("%w: command %d has no operation this binary knows", ErrDecode, i)
	}
	if version < opSince {
		return fmt.Errorf("%w: command %d has version %d, its operation needs %d", ErrDecode, i, version, opSince)
	}
	return nil
}
