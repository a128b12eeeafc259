package source

import (
	"encoding/json"
	"testing"

	"github.com/blackwidow-crawl/blackwidow/api"
)

func TestEngagementOf(t *testing.T) {
	tests := []struct {
		name string
		doc  string
		want *api.Engagement
	}{
		{"both counts", `{"r": 3, "l": 12}`, &api.Engagement{Reposts: 3, Likes: 12}},
		{"zeros are counts", `{"r": 0, "l": 0}`, &api.Engagement{}},
		{"a count missing", `{"r": 3}`, nil},
		{"null", `{"r": null, "l": 1}`, nil},
		{"negative", `{"r": -1, "l": 1}`, nil},
		{"a string", `{"r": "7", "l": 1}`, nil},
		{"a fraction", `{"r": 1.5, "l": 1}`, nil},
		{"too large", `{"r": 99999999999999999999, "l": 1}`, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var v struct {
				R Count `json:"r"`
				L Count `json:"l"`
			}
			if err := json.Unmarshal([]byte(tt.doc), &v); err != nil {
				t.Fatalf("a bad count must not fail the document: %v", err)
			}
			got := EngagementOf(v.R, v.L)
			if (got == nil) != (tt.want == nil) || got != nil && *got != *tt.want {
				t.Fatalf("EngagementOf = %+v, want %+v", got, tt.want)
			}
		})
	}
}
