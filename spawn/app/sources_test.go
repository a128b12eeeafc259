package app

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"reflect"
	"testing"

	"github.com/blackwidow-crawl/blackwidow/spawn/internal/source"
)

// builtinPath is the file the hub and bwctl read the builtin declarations
// from (api.BuiltinSources).
var builtinPath = filepath.Join("..", "..", "api", "sources.json")

// TestSources_EveryFieldIsADriver keeps Sources a list of drivers.
func TestSources_EveryFieldIsADriver(t *testing.T) {
	var s Sources
	v := reflect.ValueOf(&s).Elem()
	for i := 0; i < v.NumField(); i++ {
		if _, ok := v.Field(i).Addr().Interface().(source.Driver); !ok {
			t.Errorf("Sources.%s (%s) is not a source.Driver", v.Type().Field(i).Name, v.Field(i).Type())
		}
	}
}

// builtinJSON is what api/sources.json must hold: the declarations of the
// kinds a spawn with default settings knows.
func builtinJSON(t *testing.T) []byte {
	t.Helper()
	cfg := DefaultSettings()
	var infos []any
	for _, d := range cfg.Sources.drivers() {
		info := d.Info()
		if err := info.Validate(); err != nil {
			t.Fatal(err)
		}
		infos = append(infos, info)
	}
	b, err := json.MarshalIndent(infos, "", "  ")
	if err != nil {
		t.Fatal(err)
	}
	return append(b, '\n')
}

// TestSources_BuiltinDeclarationsAreCurrent checks that api/sources.json
// holds the source packages' own declarations; BW_UPDATE_SOURCES=1
// writes it (after a change to a declaration, or a new kind).
func TestSources_BuiltinDeclarationsAreCurrent(t *testing.T) {
	want := builtinJSON(t)
	if os.Getenv("BW_UPDATE_SOURCES") != "" {
		if err := os.WriteFile(builtinPath, want, 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	got, err := os.ReadFile(builtinPath)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got, want) {
		t.Fatalf("api/sources.json is not the source packages' declarations: run BW_UPDATE_SOURCES=1 go test -run BuiltinDeclarations ./spawn/app/")
	}
}
