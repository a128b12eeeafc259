package api

import (
	"strings"
	"testing"
	"time"
)

// TestParseRetention_RefusesWhatDoesNotFit checks that a retention is kept
// as written or refused, never wrapped: a number of days too large for a
// time.Duration once said "213505d" and kept 24h25m26s.
func TestParseRetention_RefusesWhatDoesNotFit(t *testing.T) {
	for _, tc := range []struct {
		in      string
		want    time.Duration
		refused string
	}{
		{in: "", want: 0},
		{in: "0", want: 0},
		{in: "30d", want: 30 * 24 * time.Hour},
		{in: "36h", want: 36 * time.Hour},
		{in: "7300d", want: MaxRetention},
		{in: "7301d", refused: "at most 7300d"},
		{in: "213505d", refused: "at most 7300d"},
		{in: "106752d", refused: "at most 7300d"},
		{in: "2147483647d", refused: "at most 7300d"},
		{in: "2147483648d", refused: "at most 7300d"},
		{in: "99999999999999999999d", refused: "at most 7300d"},
		{in: "2562048h", refused: "days like 30d or a duration like 36h"},
		{in: "2562047h", refused: "at most 7300d"},
		{in: "-3d", refused: "positive number of days"},
		{in: "0d", refused: "positive number of days"},
		{in: "30m", refused: "at least an hour"},
		{in: "soon", refused: "days like 30d"},
	} {
		got, err := ParseRetention(tc.in)
		switch {
		case tc.refused == "" && (err != nil || got != tc.want):
			t.Errorf("ParseRetention(%q) = %v, %v; want %v", tc.in, got, err, tc.want)
		case tc.refused != "" && (err == nil || !strings.Contains(err.Error(), tc.refused)):
			t.Errorf("ParseRetention(%q) = %v, %v; want an error saying %q", tc.in, got, err, tc.refused)
		}
		if err == nil && FormatRetention(got) != "" {
			back, err := ParseRetention(FormatRetention(got))
			if err != nil || back != got {
				t.Errorf("ParseRetention(%q) read back as %v, %v", FormatRetention(got), back, err)
			}
		}
	}
}
