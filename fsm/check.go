package fsm

import (
	"fmt"

	"google.golang.org/protobuf/encoding/protowire"

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
// version, unknown operation or JobAckBatch lists of unequal length. What
// it does not look into is the body of any other known operation: a version
// 2 entry with an intact checksum was written by EncodeEntry, whose protobuf
// marshalling cannot produce a body that does not parse, so such a body
// would mean a bug of the writer, and Apply would still stop on it with its
// log index. A JobAckBatch's lists, though, are a rule DecodeEntry enforces
// beyond protobuf's, so CheckEntry counts them too (walking the packed
// varints, still without allocating).
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

// fieldJobAckBatch is the op field number of a JobAckBatch.
var fieldJobAckBatch = (&cmdpb.Command{}).ProtoReflect().Descriptor().Fields().ByName("job_ack_batch").Number()

// checkCommand is CheckEntry for one Command message: as protobuf decodes
// it, the last version wins, an operation field counts only with the wire
// type of a message, and of several operation fields the last one wins —
// except that consecutive JobAckBatch fields, with no other operation
// between them, merge into one message, whose lists are their
// concatenation.
func checkCommand(i int, b []byte) error {
	var version uint32
	hasOp := false
	var opSince uint32
	var opNum protowire.Number
	var ackIDs, ackTokens int // list lengths of the JobAckBatch so far
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
		if since, ok := opVersions[num]; ok && typ == protowire.BytesType {
			if num == fieldJobAckBatch {
				if opNum != fieldJobAckBatch {
					ackIDs, ackTokens = 0, 0 // a new message, not a merge
				}
				body, n := protowire.ConsumeBytes(b)
				if n < 0 {
					return fmt.Errorf("%w: command %d: %w", ErrDecode, i, protowire.ParseError(n))
				}
				ids, tokens, err := countAckBatch(body)
				if err != nil {
					return fmt.Errorf("%w: command %d: job ack batch: %w", ErrDecode, i, err)
				}
				ackIDs, ackTokens = ackIDs+ids, ackTokens+tokens
			}
			hasOp, opSince, opNum = true, since, num
		}
		n = protowire.ConsumeFieldValue(num, typ, b)
		if n < 0 {
			return fmt.Errorf("%w: command %d: %w", ErrDecode, i, protowire.ParseError(n))
		}
		b = b[n:]
	}
	if version > CommandVersion {
		return newerVersionError(i, version)
	}
	if version < 1 {
		return fmt.Errorf("%w: command %d has version %d, this binary applies 1..%d", ErrDecode, i, version, CommandVersion)
	}
	if !hasOp {
		return fmt.Errorf("%w: command %d has no operation this binary knows", ErrDecode, i)
	}
	if version < opSince {
		return fmt.Errorf("%w: command %d has version %d, its operation needs %d", ErrDecode, i, version, opSince)
	}
	if opNum == fieldJobAckBatch && ackIDs != ackTokens {
		return ackBatchLengthError(i, ackIDs, ackTokens)
	}
	return nil
}

// The field numbers of a JobAckBatch's lists, from the generated
// descriptor as fieldJobAckBatch is.
var (
	ackBatchJobIDs      = (&cmdpb.JobAckBatch{}).ProtoReflect().Descriptor().Fields().ByName("job_ids").Number()
	ackBatchLeaseTokens = (&cmdpb.JobAckBatch{}).ProtoReflect().Descriptor().Fields().ByName("lease_tokens").Number()
)

// countAckBatch counts the elements of a JobAckBatch body's two lists as
// protobuf's unmarshal collects them: every occurrence of a list's field
// appends, packed (a length-delimited run of varints) or not (one varint);
// a list field of another wire type is an unknown field, skipped.
func countAckBatch(b []byte) (ids, tokens int, err error) {
	for len(b) > 0 {
		num, typ, n := protowire.ConsumeTag(b)
		if n < 0 {
			return 0, 0, protowire.ParseError(n)
		}
		b = b[n:]
		count := 0
		switch {
		case (num == ackBatchJobIDs || num == ackBatchLeaseTokens) && typ == protowire.VarintType:
			_, n = protowire.ConsumeVarint(b)
			count = 1
		case (num == ackBatchJobIDs || num == ackBatchLeaseTokens) && typ == protowire.BytesType:
			var packed []byte
			packed, n = protowire.ConsumeBytes(b)
			for len(packed) > 0 { // nil when n < 0
				_, m := protowire.ConsumeVarint(packed)
				if m < 0 {
					return 0, 0, protowire.ParseError(m)
				}
				packed = packed[m:]
				count++
			}
		default:
			n = protowire.ConsumeFieldValue(num, typ, b)
		}
		if n < 0 {
			return 0, 0, protowire.ParseError(n)
		}
		b = b[n:]
		if num == ackBatchJobIDs {
			ids += count
		} else if num == ackBatchLeaseTokens {
			tokens += count
		}
	}
	return ids, tokens, nil
}
