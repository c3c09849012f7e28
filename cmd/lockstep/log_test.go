package main

import (
	"strings"
	"testing"
)

func TestLogOptions_RejectUnknownLevelsAndFormats(t *testing.T) {
	for _, tc := range []struct {
		o    logOptions
		want string
	}{
		{logOptions{level: "info", format: "text"}, ""},
		{logOptions{level: "debug", format: "json"}, ""},
		{logOptions{level: "verbose", format: "text"}, "--log-level"},
		{logOptions{level: "info", format: "xml"}, "--log-format"},
	} {
		_, err := tc.o.logger()
		if (err == nil) != (tc.want == "") || (err != nil && !strings.Contains(err.Error(), tc.want)) {
			t.Errorf("%+v: error %v, want one naming %q", tc.o, err, tc.want)
		}
	}
}
