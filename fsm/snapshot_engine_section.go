package fsm

import (
	"bufio"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"os"
)

// engineSection is the engine's part of a snapshot as Restore reads it.
type engineSection interface {
	io.Reader
	// finish reads what the engine left of the section, which still
	// counts towards the checksum and must all be there.
	finish() error
}

// engineBytes is the engine's part of formats 1 to 5: its length, then
// that many bytes.
type engineBytes struct{ io.LimitedReader }

func (s *engineBytes) finish() error {
	rest, err := io.Copy(io.Discard, &s.LimitedReader)
	if err != nil {
		return err
	}
	if s.N != 0 {
		return fmt.Errorf("truncated (%d bytes after the engine's end, %d missing)", rest, s.N)
	}
	return nil
}

// engineChunks is the engine's part of format 6: chunks of at most
// maxEngineChunkBytes, each after its length, and an empty one at the end.
// It reads as the concatenation of the chunks, and ends (io.EOF) at the
// empty one; a stream that stops before it is io.ErrUnexpectedEOF.
type engineChunks struct {
	r    io.Reader
	left uint32 // bytes left of the chunk being read
	done bool   // the empty chunk was read
	err  error  // sticky
}

func (c *engineChunks) Read(p []byte) (int, error) {
	for c.left == 0 {
		switch {
		case c.done:
			return 0, io.EOF
		case c.err != nil:
			return 0, c.err
		}
		var length [4]byte
		if _, err := io.ReadFull(c.r, length[:]); err != nil {
			if errors.Is(err, io.EOF) {
				err = io.ErrUnexpectedEOF // the empty chunk never came
			}
			c.err = fmt.Errorf("chunk length: %w", err)
			return 0, c.err
		}
		n := binary.BigEndian.Uint32(length[:])
		if n == 0 {
			c.done = true
			return 0, io.EOF
		}
		if n > maxEngineChunkBytes {
			c.err = fmt.Errorf("a chunk of %d bytes exceeds the limit of %d", n, maxEngineChunkBytes)
			return 0, c.err
		}
		c.left = n
	}
	if len(p) > int(c.left) {
		p = p[:c.left]
	}
	n, err := c.r.Read(p)
	c.left -= uint32(n) //nolint:gosec // n <= len(p) <= c.left
	if errors.Is(err, io.EOF) {
		if c.left > 0 {
			err = io.ErrUnexpectedEOF // in the middle of a chunk
		} else {
			err = nil // the next length read says whether the stream goes on
		}
	}
	if err != nil {
		c.err = err
	}
	return n, err
}

func (c *engineChunks) finish() error {
	_, err := io.Copy(io.Discard, c)
	return err
}

// chunkWriter writes each Write as one chunk of format 6's engine part:
// its length, then its bytes. Buffered in front (writeEngineChunks), its
// chunks are engineChunkBytes long but the last.
type chunkWriter struct{ w io.Writer }

func (c chunkWriter) Write(p []byte) (int, error) {
	if len(p) == 0 {
		return 0, nil // an empty chunk would end the section
	}
	if _, err := c.w.Write(binary.BigEndian.AppendUint32(nil, uint32(len(p)))); err != nil { //nolint:gosec // at most engineChunkBytes
		return 0, err
	}
	return c.w.Write(p)
}

// writeEngineChunks writes the engine's part in format 6's chunks, ended
// by the empty one: straight from the capture, written once; or, for a
// state the engine does not capture (written under the lock into the
// temporary file by Snapshot), copied from that file. The capture stays
// referenced once written, so that a second persist of the snapshot fails
// (the capture refuses a second write) rather than copying the empty
// temporary file as the engine's part.
func (s *fileSnapshot) writeEngineChunks(out io.Writer) error {
	bw := bufio.NewWriterSize(chunkWriter{w: out}, engineChunkBytes)
	if c := s.engine; c != nil {
		if _, err := c.WriteTo(bw); err != nil {
			return err
		}
	} else {
		file, err := os.Open(s.path)
		if err != nil {
			return err
		}
		_, err = io.Copy(bw, file)
		if cerr := file.Close(); err == nil {
			err = cerr
		}
		if err != nil {
			return err
		}
	}
	if err := bw.Flush(); err != nil {
		return err
	}
	_, err := out.Write([]byte{0, 0, 0, 0})
	return err
}
