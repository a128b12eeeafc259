// Package configs holds example settings files; its test checks that every
// example parses and names only flags that exist.
package configs

import (
	"io"
	"testing"

	hubapp "github.com/blackwidow-crawl/blackwidow/hub/app"
	"github.com/blackwidow-crawl/blackwidow/pkg/config"
	spawnapp "github.com/blackwidow-crawl/blackwidow/spawn/app"
)

func noEnv(string) (string, bool) { return "", false }

func TestExampleConfigsParse(t *testing.T) {
	cases := []struct {
		file string
		cfg  any
	}{
		{"hub.yaml", ptr(hubapp.DefaultSettings())},
		{"spawn.yaml", ptr(spawnapp.DefaultSettings())},
	}
	for _, tc := range cases {
		t.Run(tc.file, func(t *testing.T) {
			if err := config.Load(tc.file, tc.cfg, []string{"--config", tc.file}, noEnv, io.Discard); err != nil {
				t.Fatal(err)
			}
		})
	}
}

func ptr[T any](v T) *T { return &v }
