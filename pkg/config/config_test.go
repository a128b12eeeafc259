package config

import (
	"io"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"
)

type settings struct {
	Listen   string        `flag:"listen" usage:"address"`
	Interval time.Duration `flag:"poll-interval" usage:"interval"`
	Allow    []string      `flag:"allow-targets" usage:"cidrs"`
	Debug    bool          `flag:"debug" usage:"debug"`
	Token    string        `flag:"node-token" usage:"token"`
}

func env(m map[string]string) func(string) (string, bool) {
	return func(k string) (string, bool) { v, ok := m[k]; return v, ok }
}

func TestLoad_PrecedenceDefaultsFileEnvFlags(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "c.yaml")
	if err := os.WriteFile(path, []byte("listen: 1.2.3.4:1\npoll-interval: 5s\nallow-targets: [10.0.0.0/8, 127.0.0.0/8]\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	tokenFile := filepath.Join(dir, "token")
	if err := os.WriteFile(tokenFile, []byte("s3cret\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	cfg := settings{Listen: "default", Interval: time.Second}
	err := Load("x", &cfg, []string{"--config", path, "--debug"}, env(map[string]string{
		"BW_POLL_INTERVAL":   "7s",
		"BW_NODE_TOKEN_FILE": tokenFile,
	}), io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	want := settings{Listen: "1.2.3.4:1", Interval: 7 * time.Second, Allow: []string{"10.0.0.0/8", "127.0.0.0/8"}, Debug: true, Token: "s3cret"}
	if !reflect.DeepEqual(cfg, want) {
		t.Fatalf("got %+v, want %+v", cfg, want)
	}
	if err := Load("x", &cfg, []string{"--poll-interval=3s"}, env(map[string]string{"BW_POLL_INTERVAL": "7s"}), io.Discard); err != nil || cfg.Interval != 3*time.Second {
		t.Fatalf("flag must beat env: %v %v", cfg.Interval, err)
	}
}

func TestLoad_RejectsTyposAndBadValues(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "c.yaml")
	_ = os.WriteFile(path, []byte("lisen: x\n"), 0o600)
	cases := []struct {
		name string
		args []string
		env  map[string]string
		want string
	}{
		{"unknown yaml key", []string{"--config", path}, nil, "unknown setting"},
		{"bad duration env", nil, map[string]string{"BW_POLL_INTERVAL": "soon"}, "duration"},
		{"unknown flag", []string{"--nope"}, nil, "not defined"},
		{"missing file", []string{"--config", filepath.Join(dir, "missing.yaml")}, nil, "unable to read"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			var cfg settings
			err := Load("x", &cfg, tc.args, env(tc.env), io.Discard)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("got %v, want error containing %q", err, tc.want)
			}
		})
	}
}

// shared and program are settings the way the binaries declare them: the
// flags several programs take in a struct each embeds.
type shared struct {
	Listen string   `flag:"listen" usage:"address"`
	Allow  []string `flag:"allow-targets" usage:"cidrs"`
	Secret string   `flag:"node-token" usage:"token"`
}

type program struct {
	shared
	Store string        `flag:"store" usage:"store"`
	Every time.Duration `flag:"poll-interval" usage:"interval"`
	Hook  func()        // not a setting
}

func TestLoad_ReadsEmbeddedStructs(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "c.yaml")
	if err := os.WriteFile(path, []byte("listen: 1.2.3.4:1\nstore: file://x\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	cfg := program{shared: shared{Listen: "default"}}
	err := Load("x", &cfg, []string{"--config", path, "--allow-targets", "10.0.0.0/8", "--poll-interval=3s"},
		env(map[string]string{"BW_NODE_TOKEN": "s3cret"}), io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	want := program{shared: shared{Listen: "1.2.3.4:1", Allow: []string{"10.0.0.0/8"}, Secret: "s3cret"}, Store: "file://x", Every: 3 * time.Second}
	if cfg.shared.Listen != want.Listen || !reflect.DeepEqual(cfg.Allow, want.Allow) || cfg.Secret != want.Secret || cfg.Store != want.Store || cfg.Every != want.Every {
		t.Fatalf("got %+v, want %+v", cfg, want)
	}
	names, err := Names(&cfg)
	if err != nil {
		t.Fatal(err)
	}
	if want := []string{"config", "listen", "allow-targets", "node-token", "store", "poll-interval"}; !reflect.DeepEqual(names, want) {
		t.Fatalf("names %v, want %v", names, want)
	}
}

func TestLoad_RefusesAFlagDeclaredTwice(t *testing.T) {
	var cfg struct {
		shared
		Again string `flag:"listen" usage:"again"`
	}
	err := Load("x", &cfg, nil, env(nil), io.Discard)
	if err == nil || !strings.Contains(err.Error(), `"listen" is declared twice`) {
		t.Fatalf("got %v, want an error naming the flag declared twice", err)
	}
}

// TestLoad_EnvTagNamesSeveralVariables: a setting known by several
// environment variables (the documented one first) reads whichever is set,
// and refuses two set to different values.
func TestLoad_EnvTagNamesSeveralVariables(t *testing.T) {
	type hubSettings struct {
		Hub string `flag:"hub" env:"BW_HUB_URL,BW_HUB" usage:"hub"`
	}
	dir := t.TempDir()
	file := filepath.Join(dir, "hub")
	if err := os.WriteFile(file, []byte("http://from-file:8700\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name, want, err string
		env             map[string]string
	}{
		{name: "documented", env: map[string]string{"BW_HUB_URL": "http://a:8700"}, want: "http://a:8700"},
		{name: "also accepted", env: map[string]string{"BW_HUB": "http://b:8700"}, want: "http://b:8700"},
		{name: "both alike", env: map[string]string{"BW_HUB_URL": "http://a:8700", "BW_HUB": "http://a:8700"}, want: "http://a:8700"},
		{name: "from a file", env: map[string]string{"BW_HUB_FILE": file}, want: "http://from-file:8700"},
		{name: "both differ", env: map[string]string{"BW_HUB_URL": "http://a:8700", "BW_HUB": "http://b:8700"},
			err: "config: BW_HUB_URL and BW_HUB are both set, to different values: set only BW_HUB_URL"},
		{name: "none", env: nil, want: ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var cfg hubSettings
			err := Load("x", &cfg, nil, env(tt.env), io.Discard)
			if tt.err != "" {
				if err == nil || err.Error() != tt.err {
					t.Fatalf("got %v, want %q", err, tt.err)
				}
				if cfg.Hub != "" {
					t.Fatalf("hub %q set although the load failed", cfg.Hub)
				}
				return
			}
			if err != nil || cfg.Hub != tt.want {
				t.Fatalf("hub %q, %v; want %q", cfg.Hub, err, tt.want)
			}
		})
	}
	if got := EnvNames(reflect.TypeFor[hubSettings]().Field(0)); !reflect.DeepEqual(got, []string{"BW_HUB_URL", "BW_HUB"}) {
		t.Fatalf("EnvNames = %v", got)
	}
}
