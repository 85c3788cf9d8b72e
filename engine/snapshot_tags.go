package engine

import (
	"errors"
	"fmt"
)

// The tags section of a layout 14 snapshot: the number of configured
// queues, then per queue in the config's order its tag count and each
// tag's key and value, sorted by key as the config holds them, so equal
// states write equal bytes.

// HasTags reports whether some queue of cfg has tags: the state is then
// written in layout 14, which an older binary cannot read; without tags it
// is written as before and digests alike.
func HasTags(cfg Config) bool {
	for _, q := range cfg.Queues {
		if len(q.Tags) > 0 {
			return true
		}
	}
	return false
}

// StripTags returns cfg without queue tags: the config a leader proposes
// while a member does not apply them yet.
func StripTags(cfg Config) Config {
	out := cloneConfig(cfg)
	for i := range out.Queues {
		out.Queues[i].Tags = nil
	}
	return out
}

func encodeTagsSection(c *encoder, cfg Config) {
	c.uvarint(uint64(len(cfg.Queues)))
	for _, q := range cfg.Queues {
		c.uvarint(uint64(len(q.Tags)))
		for _, t := range q.Tags {
			c.string(t.Key)
			c.string(t.Value)
		}
	}
}

func (d *decoder) decodeTagsSection(cfg *Config) error {
	if n := d.count(1 << 32); d.err == nil && n != len(cfg.Queues) {
		return fmt.Errorf("tags section: %d entries for %d configured queues", n, len(cfg.Queues))
	}
	tagged := false
	for i := range cfg.Queues {
		if d.err != nil {
			break
		}
		n := d.count(MaxQueueTags)
		var tags []Tag
		for k := 0; k < n && d.err == nil; k++ {
			tags = append(tags, Tag{Key: d.string(), Value: d.string()})
		}
		cfg.Queues[i].Tags = tags
		tagged = tagged || n > 0
	}
	if d.err != nil {
		return d.err
	}
	for _, q := range cfg.Queues {
		if err := validateTags(q, func(k string) string { return fmt.Sprintf("queues[%q].%s", q.Name, k) }); err != nil {
			return fmt.Errorf("tags section: %w", err)
		}
	}
	// Layout 14 is written only while a queue has tags; a later layout
	// carries the section whether or not a queue has some.
	if !tagged && d.version == snapshotVersionTags {
		return errors.New("tags section: layout 14 written without a tag")
	}
	return nil
}
