// Package configs holds example settings files, the compose file and the
// systemd units; its test checks that every example parses and names only
// flags that exist, and that the deployment files hold together.
package configs

import (
	"bufio"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"gopkg.in/yaml.v3"

	hubapp "github.com/blackwidow-crawl/blackwidow/hub/app"
	"github.com/blackwidow-crawl/blackwidow/pkg/config"
	"github.com/blackwidow-crawl/blackwidow/pkg/httpx"
	spawnapp "github.com/blackwidow-crawl/blackwidow/spawn/app"
)

func noEnv(string) (string, bool) { return "", false }

func ptr[T any](v T) *T { return &v }

// program is one binary whose flags the deployment files use.
type program struct {
	name     string
	settings func() any // a fresh pointer to its default settings
	example  string     // its example YAML in this folder
}

var programs = []program{
	{"hub", func() any { return ptr(hubapp.DefaultSettings()) }, "hub.yaml"},
	{"spawn", func() any { return ptr(spawnapp.DefaultSettings()) }, "spawn.yaml"},
}

func programNamed(t *testing.T, name string) program {
	t.Helper()
	for _, p := range programs {
		if p.name == name {
			return p
		}
	}
	t.Fatalf("no program %q (want hub or spawn)", name)
	return program{}
}

func flagNames(t *testing.T, p program) []string {
	t.Helper()
	names, err := config.Names(p.settings())
	if err != nil {
		t.Fatal(err)
	}
	return names
}

func TestExampleConfigsParse(t *testing.T) {
	for _, p := range programs {
		t.Run(p.example, func(t *testing.T) {
			if err := config.Load(p.example, p.settings(), []string{"--config", p.example}, noEnv, io.Discard); err != nil {
				t.Fatal(err)
			}
		})
	}
}

// TestExampleConfigsNameEveryFlag: each example mentions every flag of its
// program, as a key, as a commented-out key, or (for secrets) by its
// environment variable, so an operator finds every setting in one place.
func TestExampleConfigsNameEveryFlag(t *testing.T) {
	for _, p := range programs {
		t.Run(p.example, func(t *testing.T) {
			b, err := os.ReadFile(p.example)
			if err != nil {
				t.Fatal(err)
			}
			for _, name := range flagNames(t, p) {
				if name == "config" {
					continue
				}
				if missing := !namesFlag(string(b), name); missing {
					t.Errorf("%s does not mention --%s (as `%s:`, `# %s:` or %s)", p.example, name, name, name, config.EnvName(name))
				}
			}
		})
	}
}

// namesFlag reports whether a YAML example mentions the flag.
func namesFlag(text, name string) bool {
	key := regexp.MustCompile(`(?m)^#?\s*` + regexp.QuoteMeta(name) + `:`)
	env := regexp.MustCompile(`\b` + regexp.QuoteMeta(config.EnvName(name)) + `\b`)
	return key.MatchString(text) || env.MatchString(text)
}

func TestNamesFlagFindsGaps(t *testing.T) {
	cases := []struct {
		text string
		want bool
	}{
		{"listen: 127.0.0.1:8700\n", true},
		{"# advertise: http://x\n", true},
		{"#advertise: http://x\n", true},
		{"# tokens: BW_NODE_TOKEN or BW_NODE_TOKEN_FILE\n", true},
		{"listen-address: x\n", false},
		{"  # see the listen flag\n", false},
	}
	for _, tc := range cases {
		flag := "listen"
		switch {
		case strings.Contains(tc.text, "advertise"):
			flag = "advertise"
		case strings.Contains(tc.text, "TOKEN"):
			flag = "node-token"
		}
		if got := namesFlag(tc.text, flag); got != tc.want {
			t.Errorf("namesFlag(%q, %q) = %v, want %v", tc.text, flag, got, tc.want)
		}
	}
}

// ----------------------------------------------------------------- compose

// composeFile is the part of the Compose specification the checks read.
type composeFile struct {
	Name     string                    `yaml:"name"`
	Services map[string]composeService `yaml:"services"`
	Secrets  map[string]struct {
		File        string `yaml:"file"`
		Environment string `yaml:"environment"`
	} `yaml:"secrets"`
	Volumes map[string]any `yaml:"volumes"`
}

type composeService struct {
	Image       string            `yaml:"image"`
	Build       *composeBuild     `yaml:"build"`
	Command     []string          `yaml:"command"`
	Environment map[string]string `yaml:"environment"`
	Secrets     []string          `yaml:"secrets"`
	Volumes     []string          `yaml:"volumes"`
	Ports       []string          `yaml:"ports"`
	DependsOn   map[string]struct {
		Condition string `yaml:"condition"`
	} `yaml:"depends_on"`
	Healthcheck struct {
		Test     []string `yaml:"test"`
		Interval string   `yaml:"interval"`
	} `yaml:"healthcheck"`
	StopGracePeriod string `yaml:"stop_grace_period"`
}

type composeBuild struct {
	Context    string `yaml:"context"`
	Dockerfile string `yaml:"dockerfile"`
}

const composePath = "compose.yaml"

func loadCompose(t *testing.T) composeFile {
	t.Helper()
	b, err := os.ReadFile(composePath)
	if err != nil {
		t.Fatal(err)
	}
	var cf composeFile
	dec := yaml.NewDecoder(strings.NewReader(string(b)))
	if err := dec.Decode(&cf); err != nil {
		t.Fatalf("%s does not parse: %v", composePath, err)
	}
	if len(cf.Services) == 0 {
		t.Fatalf("%s has no services", composePath)
	}
	return cf
}

// checkCommand loads a hub or spawn command line the way the binary does,
// so an unknown flag or a bad value fails here. env is the service's
// environment; BW_*_FILE entries point at secrets and are not read.
func checkCommand(p program, args []string, env map[string]string) error {
	lookup := func(k string) (string, bool) {
		if strings.HasSuffix(k, "_FILE") {
			return "", false
		}
		v, ok := env[k]
		return v, ok
	}
	return config.Load(p.name, p.settings(), args, lookup, io.Discard)
}

// checkEnvNames reports BW_ variables that name no flag of the program.
func checkEnvNames(t *testing.T, p program, env map[string]string) []string {
	t.Helper()
	known := map[string]bool{}
	for _, n := range flagNames(t, p) {
		known[config.EnvName(n)] = true
		known[config.EnvName(n)+"_FILE"] = true
	}
	var bad []string
	for k := range env {
		if strings.HasPrefix(k, config.EnvPrefix) && !known[k] {
			bad = append(bad, k)
		}
	}
	slices.Sort(bad)
	return bad
}

func flagValue(args []string, name string) string {
	for i, a := range args {
		if v, ok := strings.CutPrefix(a, "--"+name+"="); ok {
			return v
		}
		if a == "--"+name && i+1 < len(args) {
			return args[i+1]
		}
	}
	return ""
}

func TestCompose_ServicesHoldTogether(t *testing.T) {
	cf := loadCompose(t)
	for _, want := range []string{"postgres", "cassandra", "nats", "hub"} {
		if _, ok := cf.Services[want]; !ok {
			t.Errorf("no %s service", want)
		}
	}
	if img := cf.Services["cassandra"].Image; !strings.HasPrefix(img, "cassandra:5.0") {
		t.Errorf("cassandra image %q, want cassandra:5.0", img)
	}
	if cmd := cf.Services["nats"].Command; !slices.Contains(cmd, "-js") && !slices.Contains(cmd, "--jetstream") {
		t.Errorf("nats runs without JetStream: %v", cmd)
	}
	var spawns []string
	for name, s := range cf.Services {
		if len(s.Healthcheck.Test) == 0 {
			t.Errorf("service %s has no healthcheck", name)
		}
		for dep, d := range s.DependsOn {
			if _, ok := cf.Services[dep]; !ok {
				t.Errorf("service %s depends on unknown service %s", name, dep)
			}
			if d.Condition != "service_healthy" {
				t.Errorf("service %s waits for %s with condition %q, want service_healthy", name, dep, d.Condition)
			}
		}
		for _, sec := range s.Secrets {
			if _, ok := cf.Secrets[sec]; !ok {
				t.Errorf("service %s uses undeclared secret %s", name, sec)
			}
		}
		for _, v := range s.Volumes {
			src, _, _ := strings.Cut(v, ":")
			if !strings.HasPrefix(src, ".") && !strings.HasPrefix(src, "/") {
				if _, ok := cf.Volumes[src]; !ok {
					t.Errorf("service %s uses undeclared volume %s", name, src)
				}
			}
		}
		for k, v := range s.Environment {
			if strings.HasSuffix(k, "TOKEN") && v != "" {
				t.Errorf("service %s: %s is set in the compose file; pass tokens as secrets (%s_FILE)", name, k, k)
			}
			if file, ok := strings.CutSuffix(k, "_FILE"); ok && strings.HasPrefix(v, "/run/secrets/") {
				if sec := strings.TrimPrefix(v, "/run/secrets/"); !slices.Contains(s.Secrets, sec) {
					t.Errorf("service %s: %s reads secret %s it is not given", name, file+"_FILE", sec)
				}
			}
		}
		if len(s.Command) > 0 && (s.Command[0] == "hub" || s.Command[0] == "spawn") {
			if s.Build == nil {
				t.Errorf("service %s has no build section", name)
			} else if _, err := os.Stat(filepath.Join(s.Build.Context, s.Build.Dockerfile)); err != nil {
				t.Errorf("service %s build: %v", name, err)
			}
			if s.Command[0] == "spawn" {
				spawns = append(spawns, name)
			}
		}
	}
	slices.Sort(spawns)
	if len(spawns) < 2 {
		t.Errorf("spawn services %v, want at least two", spawns)
	}
	for _, sec := range cf.Secrets {
		if sec.File == "" && sec.Environment == "" {
			t.Errorf("a secret has neither file nor environment")
		}
	}

	hub := cf.Services["hub"]
	if db := flagValue(hub.Command[1:], "db"); !strings.HasPrefix(db, "postgres://") {
		t.Errorf("hub --db %q, want a postgres:// DSN", db)
	}
	if !dependsOn(hub, "postgres") {
		t.Errorf("hub does not wait for postgres")
	}
	advertised := map[string]bool{}
	for _, name := range spawns {
		s := cf.Services[name]
		args := s.Command[1:]
		if st := flagValue(args, "store"); !strings.HasPrefix(st, "cassandra://") {
			t.Errorf("%s --store %q, want cassandra://", name, st)
		}
		if q := flagValue(args, "queue"); q != "nats://nats:4222" {
			t.Errorf("%s --queue %q, want nats://nats:4222", name, q)
		}
		if h := flagValue(args, "hub"); h != "http://hub:8700" {
			t.Errorf("%s --hub %q, want http://hub:8700", name, h)
		}
		adv := flagValue(args, "advertise")
		if !strings.HasPrefix(adv, "http://"+name+":") {
			t.Errorf("%s --advertise %q must name the service itself", name, adv)
		}
		if advertised[adv] {
			t.Errorf("%s advertises %s like another spawn", name, adv)
		}
		advertised[adv] = true
		for _, dep := range []string{"hub", "cassandra", "nats"} {
			if !dependsOn(s, dep) {
				t.Errorf("%s does not wait for %s", name, dep)
			}
		}
		grace, err := time.ParseDuration(s.StopGracePeriod)
		if err != nil || grace <= spawnapp.StopBudget {
			t.Errorf("%s stop_grace_period %q, want more than the %s a spawn may take to drain and stop", name, s.StopGracePeriod, spawnapp.StopBudget)
		}
	}
}

func dependsOn(s composeService, name string) bool {
	_, ok := s.DependsOn[name]
	return ok
}

// TestCompose_CommandsNameRealFlags loads every hub and spawn command line
// of the compose file with the binaries' own settings loader.
func TestCompose_CommandsNameRealFlags(t *testing.T) {
	cf := loadCompose(t)
	checked := 0
	for name, s := range cf.Services {
		if len(s.Command) == 0 || (s.Command[0] != "hub" && s.Command[0] != "spawn") {
			continue
		}
		checked++
		t.Run(name, func(t *testing.T) {
			p := programNamed(t, s.Command[0])
			if err := checkCommand(p, s.Command[1:], s.Environment); err != nil {
				t.Errorf("%s: %v", strings.Join(s.Command, " "), err)
			}
			if bad := checkEnvNames(t, p, s.Environment); len(bad) > 0 {
				t.Errorf("environment names no %s flag: %v", p.name, bad)
			}
		})
	}
	if checked < 3 {
		t.Fatalf("checked %d hub/spawn services, want a hub and two spawns", checked)
	}
}

// TestCompose_ChecksCanFail proves the command check refuses what the
// binaries would refuse.
func TestCompose_ChecksCanFail(t *testing.T) {
	spawn := programNamed(t, "spawn")
	cases := []struct {
		name string
		args []string
		env  map[string]string
	}{
		{"unknown flag", []string{"--hub=http://hub:8700", "--stores=file://x"}, nil},
		{"hub flag on a spawn", []string{"--hub=http://hub:8700", "--db=postgres://x"}, nil},
		{"bad duration", []string{"--hub=http://hub:8700", "--feed-interval=often"}, nil},
		{"bad environment value", []string{"--hub=http://hub:8700"}, map[string]string{"BW_FEED_INTERVAL": "often"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			if err := checkCommand(spawn, tc.args, tc.env); err == nil {
				t.Fatalf("%v accepted", tc.args)
			}
		})
	}
	if bad := checkEnvNames(t, spawn, map[string]string{"BW_NODE_TOKEN_FILE": "x", "BW_STORES": "x", "PGPASSWORD": "x"}); !slices.Equal(bad, []string{"BW_STORES"}) {
		t.Fatalf("unknown environment names %v, want [BW_STORES]", bad)
	}
}

// ----------------------------------------------------------------- systemd

// unitFile is a systemd unit: sections of key=value lines, a key may repeat.
type unitFile map[string]map[string][]string

func (u unitFile) get(section, key string) string {
	vs := u[section][key]
	if len(vs) == 0 {
		return ""
	}
	return vs[len(vs)-1]
}

// parseUnit reads the INI-like unit syntax: [Section] headers, key=value
// lines, # and ; comments, and backslash line continuations.
func parseUnit(r io.Reader) (unitFile, error) {
	u := unitFile{}
	section := ""
	sc := bufio.NewScanner(r)
	lineNo := 0
	var pending string
	for sc.Scan() {
		lineNo++
		line := strings.TrimSpace(sc.Text())
		if pending != "" {
			line = pending + " " + line
			pending = ""
		}
		if line == "" || strings.HasPrefix(line, "#") || strings.HasPrefix(line, ";") {
			continue
		}
		if s, ok := strings.CutSuffix(line, `\`); ok {
			pending = strings.TrimSpace(s)
			continue
		}
		if strings.HasPrefix(line, "[") {
			if !strings.HasSuffix(line, "]") {
				return nil, fmt.Errorf("line %d: bad section header %q", lineNo, line)
			}
			section = line[1 : len(line)-1]
			if u[section] == nil {
				u[section] = map[string][]string{}
			}
			continue
		}
		key, value, ok := strings.Cut(line, "=")
		if !ok || strings.TrimSpace(key) == "" {
			return nil, fmt.Errorf("line %d: want key=value, got %q", lineNo, line)
		}
		if section == "" {
			return nil, fmt.Errorf("line %d: %q is outside any section", lineNo, line)
		}
		key = strings.TrimSpace(key)
		u[section][key] = append(u[section][key], strings.TrimSpace(value))
	}
	if pending != "" {
		return nil, fmt.Errorf("line %d: continuation at the end of the file", lineNo)
	}
	return u, sc.Err()
}

// parseTimeSpan reads the systemd time spans the units use: "90", "45s",
// "1min", "2min 30s".
func parseTimeSpan(s string) (time.Duration, error) {
	if n, err := strconv.Atoi(s); err == nil {
		return time.Duration(n) * time.Second, nil
	}
	units := map[string]time.Duration{"ms": time.Millisecond, "s": time.Second, "sec": time.Second, "m": time.Minute, "min": time.Minute, "h": time.Hour}
	var total time.Duration
	re := regexp.MustCompile(`^(\d+)\s*([a-z]+)$`)
	for _, part := range strings.Fields(s) {
		m := re.FindStringSubmatch(part)
		if m == nil {
			return 0, fmt.Errorf("bad time span %q", s)
		}
		n, _ := strconv.Atoi(m[1])
		unit, ok := units[m[2]]
		if !ok {
			return 0, fmt.Errorf("bad time unit in %q", s)
		}
		total += time.Duration(n) * unit
	}
	if total == 0 {
		return 0, fmt.Errorf("bad time span %q", s)
	}
	return total, nil
}

var units = []struct {
	file    string
	program string
	// stopAtLeast is how long the program may take to stop gracefully.
	stopAtLeast time.Duration
}{
	{"systemd/blackwidow-hub.service", "hub", httpx.ShutdownGrace},
	{"systemd/blackwidow-spawn.service", "spawn", spawnapp.StopBudget},
}

func loadUnit(t *testing.T, file string) unitFile {
	t.Helper()
	f, err := os.Open(file)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	u, err := parseUnit(f)
	if err != nil {
		t.Fatalf("%s: %v", file, err)
	}
	return u
}

// execArgs splits ExecStart into the binary and its arguments, and points
// --config at the example in this folder the unit expects in /etc.
func execArgs(t *testing.T, exec string) (string, []string) {
	t.Helper()
	fields := strings.Fields(exec)
	if len(fields) == 0 {
		t.Fatal("empty ExecStart")
	}
	args := slices.Clone(fields[1:])
	for i, a := range args {
		switch {
		case a == "--config" && i+1 < len(args):
			args[i+1] = exampleFor(t, args[i+1])
		case strings.HasPrefix(a, "--config="):
			args[i] = "--config=" + exampleFor(t, strings.TrimPrefix(a, "--config="))
		}
	}
	return fields[0], args
}

func exampleFor(t *testing.T, etcPath string) string {
	t.Helper()
	if !strings.HasPrefix(etcPath, "/etc/blackwidow/") {
		t.Errorf("--config %s: want a file in /etc/blackwidow", etcPath)
	}
	local := filepath.Base(etcPath)
	if _, err := os.Stat(local); err != nil {
		t.Errorf("--config %s: no example %s ships in configs/", etcPath, local)
	}
	return local
}

func TestSystemdUnits(t *testing.T) {
	for _, tc := range units {
		t.Run(filepath.Base(tc.file), func(t *testing.T) {
			u := loadUnit(t, tc.file)
			for _, msg := range unitProblems(t, u, tc.program, tc.stopAtLeast) {
				t.Error(msg)
			}
		})
	}
}

// unitProblems lists what a unit lacks to run the program safely.
func unitProblems(t *testing.T, u unitFile, programName string, stopAtLeast time.Duration) []string {
	t.Helper()
	var out []string
	require := func(section, key, want string) {
		got := u.get(section, key)
		switch {
		case got == "":
			out = append(out, fmt.Sprintf("[%s] %s= is missing", section, key))
		case want != "" && got != want:
			out = append(out, fmt.Sprintf("[%s] %s=%s, want %s", section, key, got, want))
		}
	}
	for _, s := range []string{"Unit", "Service", "Install"} {
		if u[s] == nil {
			out = append(out, fmt.Sprintf("no [%s] section", s))
		}
	}
	require("Unit", "Description", "")
	require("Install", "WantedBy", "multi-user.target")
	require("Service", "ExecStart", "")
	require("Service", "EnvironmentFile", "")
	require("Service", "Restart", "on-failure")
	require("Service", "NoNewPrivileges", "yes")
	require("Service", "ProtectSystem", "strict")
	require("Service", "StateDirectory", "")
	require("Service", "LimitNOFILE", "")
	require("Service", "TimeoutStopSec", "")
	if u.get("Service", "User") == "" && u.get("Service", "DynamicUser") != "yes" {
		out = append(out, "[Service] runs as root: set User= or DynamicUser=yes")
	}
	if programName == "spawn" && u.get("Service", "ReadWritePaths") == "" {
		out = append(out, "[Service] ReadWritePaths= must list the file store")
	}
	if n, err := strconv.Atoi(u.get("Service", "LimitNOFILE")); err != nil || n < 4096 {
		out = append(out, fmt.Sprintf("[Service] LimitNOFILE=%s, want a number of at least 4096", u.get("Service", "LimitNOFILE")))
	}
	if stop, err := parseTimeSpan(u.get("Service", "TimeoutStopSec")); err != nil || stop <= stopAtLeast {
		out = append(out, fmt.Sprintf("[Service] TimeoutStopSec=%s must exceed the %s the %s may take to stop", u.get("Service", "TimeoutStopSec"), stopAtLeast, programName))
	}
	if execStart := u.get("Service", "ExecStart"); execStart != "" {
		bin, args := execArgs(t, execStart)
		if filepath.Base(bin) != programName || !filepath.IsAbs(bin) {
			out = append(out, fmt.Sprintf("ExecStart runs %s, want an absolute path to %s", bin, programName))
		}
		p := programNamed(t, programName)
		if err := config.Load(p.name, p.settings(), args, noEnv, io.Discard); err != nil {
			out = append(out, fmt.Sprintf("ExecStart %v: %v", args, err))
		}
	}
	return out
}

func TestSystemdUnits_ChecksCanFail(t *testing.T) {
	good := loadUnit(t, units[1].file)
	cases := []struct {
		name   string
		change func(u unitFile)
		want   string
	}{
		{"unknown flag", func(u unitFile) {
			u["Service"]["ExecStart"] = []string{"/usr/local/bin/spawn --config /etc/blackwidow/spawn.yaml --stor file:///x"}
		}, "ExecStart"},
		{"short stop timeout", func(u unitFile) { u["Service"]["TimeoutStopSec"] = []string{"30s"} }, "TimeoutStopSec"},
		{"root", func(u unitFile) { delete(u["Service"], "User") }, "runs as root"},
		{"no hardening", func(u unitFile) { u["Service"]["ProtectSystem"] = []string{"full"} }, "ProtectSystem"},
		{"no store path", func(u unitFile) { delete(u["Service"], "ReadWritePaths") }, "ReadWritePaths"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			u := unitFile{}
			for s, kv := range good {
				u[s] = map[string][]string{}
				for k, v := range kv {
					u[s][k] = slices.Clone(v)
				}
			}
			tc.change(u)
			got := strings.Join(unitProblems(t, u, "spawn", units[1].stopAtLeast), "\n")
			if !strings.Contains(got, tc.want) {
				t.Fatalf("problems %q do not mention %q", got, tc.want)
			}
		})
	}
	if _, err := parseUnit(strings.NewReader("Description=x\n")); err == nil {
		t.Error("a key outside any section parsed")
	}
	if _, err := parseUnit(strings.NewReader("[Unit]\nDescription\n")); err == nil {
		t.Error("a line without = parsed")
	}
}

// TestSystemdUnits_EnvironmentExamples: the example environment files set
// only variables the programs read.
func TestSystemdUnits_EnvironmentExamples(t *testing.T) {
	cases := []struct{ file, program string }{
		{"systemd/hub.env.example", "hub"},
		{"systemd/spawn.env.example", "spawn"},
	}
	for _, tc := range cases {
		t.Run(filepath.Base(tc.file), func(t *testing.T) {
			b, err := os.ReadFile(tc.file)
			if err != nil {
				t.Fatal(err)
			}
			env := map[string]string{}
			for line := range strings.SplitSeq(string(b), "\n") {
				line = strings.TrimSpace(strings.TrimPrefix(strings.TrimSpace(line), "#"))
				if k, v, ok := strings.Cut(line, "="); ok && !strings.ContainsAny(k, " \t") {
					env[k] = v
				}
			}
			if len(env) == 0 {
				t.Fatal("no variables")
			}
			if bad := checkEnvNames(t, programNamed(t, tc.program), env); len(bad) > 0 {
				t.Errorf("variables that name no %s flag: %v", tc.program, bad)
			}
		})
	}
}

// TestSystemdUnits_Verify asks systemd itself about the units where
// systemd-analyze is installed (the binaries stand in as /bin/true).
func TestSystemdUnits_Verify(t *testing.T) {
	analyze, err := exec.LookPath("systemd-analyze")
	if err != nil {
		t.Skip("systemd-analyze is not installed")
	}
	stand, err := exec.LookPath("true")
	if err != nil {
		t.Skip("no true binary")
	}
	dir := t.TempDir()
	var paths []string
	for _, tc := range units {
		b, err := os.ReadFile(tc.file)
		if err != nil {
			t.Fatal(err)
		}
		text := strings.ReplaceAll(string(b), "/usr/local/bin/"+tc.program+" ", stand+" ")
		path := filepath.Join(dir, filepath.Base(tc.file))
		if err := os.WriteFile(path, []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
		paths = append(paths, path)
	}
	out, err := exec.Command(analyze, append([]string{"verify"}, paths...)...).CombinedOutput()
	for line := range strings.SplitSeq(strings.TrimSpace(string(out)), "\n") {
		if strings.Contains(line, dir) {
			t.Errorf("systemd-analyze verify: %s", line)
		}
	}
	if err != nil && !t.Failed() {
		t.Logf("systemd-analyze verify exited with %v (no finding about the units): %s", err, out)
	}
}

// ------------------------------------------------------------- Dockerfile

// TestDockerfile checks the image recipe without a Docker engine: a build
// stage that compiles the three binaries statically and a runtime stage
// that runs them as an unprivileged user and exposes the hub's port.
func TestDockerfile(t *testing.T) {
	b, err := os.ReadFile("../Dockerfile")
	if err != nil {
		t.Fatal(err)
	}
	var stages, users, exposes []string
	var builds string
	var lines []string
	var cont string
	for line := range strings.SplitSeq(string(b), "\n") {
		line = strings.TrimSpace(line)
		if strings.HasPrefix(line, "#") {
			continue
		}
		if s, ok := strings.CutSuffix(line, `\`); ok {
			cont += s + " "
			continue
		}
		lines = append(lines, cont+line)
		cont = ""
	}
	for _, line := range lines {
		word, rest, _ := strings.Cut(line, " ")
		switch strings.ToUpper(word) {
		case "FROM":
			stages = append(stages, rest)
		case "USER":
			users = append(users, rest)
		case "EXPOSE":
			exposes = append(exposes, strings.Fields(rest)...)
		case "RUN", "ENV":
			if strings.Contains(rest, "go build") || strings.Contains(rest, "CGO_ENABLED") {
				builds += rest + " "
			}
		}
	}
	if len(stages) < 2 {
		t.Errorf("%d FROM lines, want a build stage and a runtime stage", len(stages))
	}
	for _, pkg := range []string{"./hub", "./spawn", "./cmd/bwctl", "CGO_ENABLED=0"} {
		if !strings.Contains(builds, pkg) {
			t.Errorf("the build does not mention %s", pkg)
		}
	}
	if len(users) == 0 {
		t.Error("the image runs as root: add USER")
	} else if u := users[len(users)-1]; u == "root" || strings.HasPrefix(u, "0") {
		t.Errorf("the image runs as %s", u)
	}
	if !slices.Contains(exposes, "8700") {
		t.Errorf("EXPOSE %v does not include the hub's 8700", exposes)
	}
}
