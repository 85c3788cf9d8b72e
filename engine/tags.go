package engine

import (
	"cmp"
	"fmt"
	"maps"
	"slices"
	"strings"
	"unicode"
	"unicode/utf8"
)

// Queue tags: key/value labels an operator puts on a queue to find it (the
// admin UI's filter, ListQueues' tag filter). They change nothing about how
// the queue runs. The bounds are SQS's, so tags carried over from there fit.
const (
	MaxQueueTags     = 50
	MaxTagKeyBytes   = 128
	MaxTagValueBytes = 256
)

// Tag is one queue tag. A queue's tags are a slice sorted by key with no
// key twice, not a map: the engine's state, snapshot and answers must not
// depend on map iteration order.
type Tag struct {
	Key   string
	Value string
}

// TagsFromMap is m as a queue's tags, sorted by key; nil for an empty m.
func TagsFromMap(m map[string]string) []Tag {
	if len(m) == 0 {
		return nil
	}
	out := make([]Tag, 0, len(m))
	for _, k := range slices.Sorted(maps.Keys(m)) {
		out = append(out, Tag{Key: k, Value: m[k]})
	}
	return out
}

// TagsMap is tags as a map (for the API's map field); nil when none.
func TagsMap(tags []Tag) map[string]string {
	if len(tags) == 0 {
		return nil
	}
	out := make(map[string]string, len(tags))
	for _, t := range tags {
		out[t.Key] = t.Value
	}
	return out
}

// CheckTag says why key and value cannot be a queue tag; "" when they can.
// The API and the config file call it to name their own field; the engine
// checks every queue's tags with it again, so no path around them exists.
func CheckTag(key, value string) string {
	switch {
	case len(key) == 0:
		return "the key is empty; a key is 1..128 bytes"
	case len(key) > MaxTagKeyBytes:
		return fmt.Sprintf("the key is %d bytes, above the limit of %d", len(key), MaxTagKeyBytes)
	case !utf8.ValidString(key):
		return "the key is not valid UTF-8"
	case len(value) > MaxTagValueBytes:
		return fmt.Sprintf("the value is %d bytes, above the limit of %d", len(value), MaxTagValueBytes)
	case !utf8.ValidString(value):
		return "the value is not valid UTF-8"
	}
	if i := strings.IndexFunc(key, func(r rune) bool { return !tagKeyRune(r) }); i >= 0 {
		r, _ := utf8.DecodeRuneInString(key[i:])
		return fmt.Sprintf("the key holds %q; a key is letters, digits, spaces and _ . : / = + - @", r)
	}
	return ""
}

// tagKeyRune reports whether r may appear in a tag key: what SQS allows.
func tagKeyRune(r rune) bool {
	return unicode.IsLetter(r) || unicode.IsDigit(r) || r == ' ' || strings.ContainsRune("_.:/=+-@", r)
}

// validateTags checks a queue's tags: the count, each key and value, and
// that they are sorted by key with no key twice (the engine's own form).
func validateTags(q QueueConfig, key func(string) string) error {
	if len(q.Tags) > MaxQueueTags {
		return invalid(key("tags"), "%d tags, above the limit of %d", len(q.Tags), MaxQueueTags)
	}
	for i, t := range q.Tags {
		if reason := CheckTag(t.Key, t.Value); reason != "" {
			return invalid(fmt.Sprintf("%s[%s]", key("tags"), quoteShort(t.Key)), "%s", reason)
		}
		if i > 0 && q.Tags[i-1].Key >= t.Key {
			return invalid(key("tags"), "not sorted by key, or key %s twice", quoteShort(t.Key))
		}
	}
	return nil
}

// TagFilter is one term of a queue list's tag filter: a queue matches when
// it has the tag Key and, if HasValue, with the value Value.
type TagFilter struct {
	Key      string
	Value    string
	HasValue bool
}

// ParseTagFilter reads one filter term: "key=value" (the tag with that
// value) or "key" (the tag with any value). The first '=' splits, so a
// value may hold '='; a key cannot start with one.
func ParseTagFilter(s string) (TagFilter, error) {
	k, v, ok := strings.Cut(s, "=")
	if reason := CheckTag(k, v); reason != "" {
		return TagFilter{}, invalid("tag", "%s in %s; a term is key=value or key", reason, quoteShort(s))
	}
	return TagFilter{Key: k, Value: v, HasValue: ok}, nil
}

// MatchTags reports whether tags satisfy every term of filter.
func MatchTags(tags []Tag, filter []TagFilter) bool {
	for _, f := range filter {
		i, ok := slices.BinarySearchFunc(tags, f.Key, func(t Tag, k string) int { return cmp.Compare(t.Key, k) })
		if !ok || (f.HasValue && tags[i].Value != f.Value) {
			return false
		}
	}
	return true
}
