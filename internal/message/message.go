// Package message shapes the human-readable text Lockstep puts in conditions,
// status fields and Events.
package message

import "unicode/utf8"

// mark ends a cut message.
const mark = "..."

// Truncate cuts s to at most n bytes, on a rune boundary so that the result
// stays valid UTF-8, and marks the cut. A status field or condition message
// has a size limit; the apiserver rejects a write with invalid UTF-8.
func Truncate(s string, n int) string {
	if len(s) <= n {
		return s
	}
	if n <= len(mark) {
		return mark[:max(n, 0)]
	}
	cut := n - len(mark)
	for cut > 0 && !utf8.RuneStart(s[cut]) {
		cut--
	}
	return s[:cut] + mark
}
