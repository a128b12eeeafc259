package app_test

import (
	"io"
	"reflect"
	"testing"

	"github.com/blackwidow-crawl/blackwidow/pkg/config"
	"github.com/blackwidow-crawl/blackwidow/spawn/app"
)

// TestSettings_HubURLFromEitherVariable: a spawn reads the hub's URL from
// BW_HUB_URL, the name bwctl reads and the documentation gives, and from
// BW_HUB, the name its --hub flag makes.
func TestSettings_HubURLFromEitherVariable(t *testing.T) {
	const hub = "http://hub.example:8700"
	for _, name := range []string{"BW_HUB_URL", "BW_HUB"} {
		t.Run(name, func(t *testing.T) {
			cfg := app.DefaultSettings()
			env := func(k string) (string, bool) { return hub, k == name }
			if err := config.Load("spawn", &cfg, nil, env, io.Discard); err != nil {
				t.Fatal(err)
			}
			if cfg.Hub != hub {
				t.Fatalf("hub %q from %s, want %q", cfg.Hub, name, hub)
			}
		})
	}
}

// TestSettings_HoldOnlySettings: every field of the spawn's settings is a
// flag (an environment variable, a key of the --config file); what only
// tests set is an Option of Start.
func TestSettings_HoldOnlySettings(t *testing.T) {
	var check func(reflect.Type)
	check = func(typ reflect.Type) {
		for i := range typ.NumField() {
			f := typ.Field(i)
			switch {
			case f.Tag.Get("flag") != "":
			case f.Type.Kind() == reflect.Struct && f.Tag.Get("flag") == "":
				// Embedded shared settings, or a source kind's own.
				check(f.Type)
			default:
				t.Errorf("Settings.%s is no flag", f.Name)
			}
		}
	}
	check(reflect.TypeFor[app.Settings]())
}
