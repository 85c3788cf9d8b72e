package client

import "testing"

func TestNewKey_UniqueHex(t *testing.T) {
	seen := map[string]bool{}
	for range 3 * 4096 / 16 { // across several refills of the pool
		k := newKey()
		if len(k) != 32 || seen[k] {
			t.Fatalf("key %q: want 32 hex digits, never repeated", k)
		}
		for _, r := range k {
			if !('0' <= r && r <= '9' || 'a' <= r && r <= 'f') {
				t.Fatalf("key %q is not lower-case hex", k)
			}
		}
		seen[k] = true
	}
}

func BenchmarkNewKey(b *testing.B) {
	b.ReportAllocs()
	for i := 0; i < b.N; i++ {
		_ = newKey()
	}
}
