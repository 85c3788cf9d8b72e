package store

import (
	"encoding/binary"
	"fmt"
)

// Key layout. Every key starts with a one-byte kind, so each kind is one
// contiguous span that an iterator bounds exactly (never scanning another
// kind's keys or tombstones):
//
//	0x00 'm'                          StoreMeta (the applied index)
//	0x01 id (8 bytes, big endian)     JobBody, written once, SingleDelete'd
//	0x02 id (8 bytes, big endian)     JobProgress, overwritten, Delete'd
//	0x03 n (1 byte) queue (n bytes) id (8 bytes, big endian)
//	                                  DeadLetter, written once, SingleDelete'd
//	0x04 id (8 bytes, big endian)     CompletedJob, written once at the ack,
//	                                  SingleDelete'd when its retention ends
//
// Job ids are assigned in enqueue order, so the bodies of a queue's head sit
// together in id order: what the engine hands out together is read by one
// bounded iterator, not by one point lookup per job. The dead letters of one
// queue share the prefix 0x03 n queue, in id order; the length byte keeps one
// queue's prefix from being the prefix of another's ("a" and "ab").
const (
	kindMeta     byte = 0x00
	kindBody     byte = 0x01
	kindProgress byte = 0x02
	kindDead     byte = 0x03
	// kindCompleted keys a completed job by id alone: GetJob finds it with
	// one point lookup, and the engine, which keeps each queue's completed
	// ids in completion order in memory (16 B each), deletes it by id at
	// expiry and lists a queue's by id.
	kindCompleted byte = 0x04
	kindEnd       byte = 0x05 // first byte past every data key

	// MaxQueueBytes bounds a queue name in a dead-letter key (one length
	// byte). The engine's own bound (engine.MaxQueueNameBytes) is lower.
	MaxQueueBytes = 255
)

var metaKey = []byte{kindMeta, 'm'}

func idKey(kind byte, id uint64) []byte {
	k := make([]byte, 9)
	k[0] = kind
	binary.BigEndian.PutUint64(k[1:], id)
	return k
}

func bodyKey(id uint64) []byte      { return idKey(kindBody, id) }
func progressKey(id uint64) []byte  { return idKey(kindProgress, id) }
func completedKey(id uint64) []byte { return idKey(kindCompleted, id) }

// deadPrefix is the prefix of every dead-letter key of queue.
func deadPrefix(queue string) ([]byte, error) {
	if len(queue) == 0 || len(queue) > MaxQueueBytes {
		return nil, fmt.Errorf("%w: queue name must be 1..%d bytes, got %d", ErrInvalidArgument, MaxQueueBytes, len(queue))
	}
	k := make([]byte, 0, 2+len(queue)+8)
	k = append(k, kindDead, byte(len(queue)))
	return append(k, queue...), nil
}

func deadKey(queue string, id uint64) ([]byte, error) {
	k, err := deadPrefix(queue)
	if err != nil {
		return nil, err
	}
	return binary.BigEndian.AppendUint64(k, id), nil
}

// prefixEnd is the smallest key greater than every key with prefix p (p is
// never all 0xff here: it starts with a kind byte below 0xff).
func prefixEnd(p []byte) []byte {
	end := append([]byte(nil), p...)
	for i := len(end) - 1; i >= 0; i-- {
		if end[i] < 0xff {
			end[i]++
			return end[:i+1]
		}
	}
	return nil
}

// keyID is the job id at the end of a body, progress or dead-letter key.
func keyID(k []byte) uint64 { return binary.BigEndian.Uint64(k[len(k)-8:]) }
