package message

import (
	"strings"
	"testing"
	"unicode/utf8"

	"pgregory.net/rapid"
)

func TestTruncate(t *testing.T) {
	for _, c := range []struct {
		in   string
		n    int
		want string
	}{
		{"short", 10, "short"},
		{"exactly10!", 10, "exactly10!"},
		{"a long message", 10, "a long ..."},
		// "é" is two bytes: a cut inside it moves back to its start.
		{"abcdéfgh", 8, "abcd..."},
		{"abcdef", 2, ".."},
		{"abcdef", 0, ""},
	} {
		if got := Truncate(c.in, c.n); got != c.want {
			t.Errorf("Truncate(%q, %d) = %q, want %q", c.in, c.n, got, c.want)
		}
	}
}

// TestTruncate_AlwaysValidAndBounded: whatever the text and the limit, the
// result is valid UTF-8, at most n bytes, and s itself when it fits.
func TestTruncate_AlwaysValidAndBounded(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		s := rapid.StringMatching(`[a-zé日本語🙂 ]{0,40}`).Draw(t, "s")
		n := rapid.IntRange(0, 50).Draw(t, "n")
		got := Truncate(s, n)
		if !utf8.ValidString(got) {
			t.Fatalf("Truncate(%q, %d) = %q: invalid UTF-8", s, n, got)
		}
		if len(got) > n {
			t.Fatalf("Truncate(%q, %d) = %q: %d bytes", s, n, got, len(got))
		}
		if len(s) <= n && got != s {
			t.Fatalf("Truncate(%q, %d) = %q: cut what fits", s, n, got)
		}
		if len(s) > n && n > 3 && !strings.HasPrefix(s, strings.TrimSuffix(got, mark)) {
			t.Fatalf("Truncate(%q, %d) = %q: not a prefix", s, n, got)
		}
	})
}
