// Package config loads a program's settings in one order for every binary:
// the defaults in its struct, then a YAML file named by --config, then the
// environment (BW_ + the upper-snake flag name, and BW_..._FILE for secrets),
// then command-line flags (Load).
package config

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"reflect"
	"strconv"
	"strings"
	"time"

	"gopkg.in/yaml.v3"
)

// EnvPrefix starts every environment variable the binaries read.
const EnvPrefix = "BW_"

// Caps on what a setting file may hold, so a wrong path (a log, a device)
// fails clearly instead of filling memory.
const (
	maxYAMLBytes   = 1 << 20  // a --config file
	maxSecretBytes = 64 << 10 // a *_FILE secret
)

// ErrHelp is returned when the user asked for -h or --help.
var ErrHelp = flag.ErrHelp

// field is one tagged setting.
type field struct {
	name  string
	envs  []string // environment variables, the documented first (EnvNames)
	usage string
	// secret marks a credential (tag secret:"true").
	secret bool
	v      reflect.Value
}

// Load fills cfg (a pointer to a tagged struct) from file, environment and
// args. Unknown YAML keys and unknown flags are errors, so a typo never passes
// silently.
//
// A settings struct tags each field with its flag name and usage:
//
//	Listen string `flag:"listen" usage:"address to listen on"`
//
// A field whose environment variable does not follow the rule names it with
// an env tag (`env:"BW_HUB_URL"`); a tag may name several, comma-separated,
// the documented one first and the others accepted too (`env:"BW_HUB_URL,BW_HUB"`). The tagged fields of an embedded struct
// are read as the struct's own, so settings several programs share are
// declared once; a flag declared twice is an error. Supported field types: string, bool, int,
// int64, float64, time.Duration and []string (comma-separated on the command
// line and in the environment).
func Load(name string, cfg any, args []string, lookupEnv func(string) (string, bool), usageOut io.Writer) error {
	fields, err := fieldsOf(cfg)
	if err != nil {
		return err
	}
	fs := flag.NewFlagSet(name, flag.ContinueOnError)
	fs.SetOutput(usageOut)
	var configPath string
	fs.StringVar(&configPath, "config", "", "YAML file with settings (flag names as keys)")
	for _, f := range fields {
		fs.Var(value{f.v}, f.name, f.usage)
	}

	if path := scanConfigFlag(args); path != "" {
		if err := loadYAML(path, fields); err != nil {
			return err
		}
	} else if path, ok := lookupEnv(EnvPrefix + "CONFIG"); ok && path != "" {
		if err := loadYAML(path, fields); err != nil {
			return err
		}
	}
	for _, f := range fields {
		s, key, ok, err := f.fromEnv(lookupEnv)
		if err != nil {
			return err
		}
		if ok {
			if err := f.Set(s); err != nil {
				return fmt.Errorf("config: %s: %w", key, err)
			}
		}
	}
	if err := fs.Parse(args); err != nil {
		return err
	}
	if fs.NArg() > 0 {
		return fmt.Errorf("config: unexpected argument %q", fs.Arg(0))
	}
	return nil
}

// Names lists the flag names a settings struct defines, for tests that check
// example configs name only real flags.
func Names(cfg any) ([]string, error) {
	fields, err := fieldsOf(cfg)
	if err != nil {
		return nil, err
	}
	names := []string{"config"}
	for _, f := range fields {
		names = append(names, f.name)
	}
	return names, nil
}

// EnvNames are the environment variables a settings field reads: those its
// env tag names, the documented one first, else EnvName of its flag.
func EnvNames(sf reflect.StructField) []string {
	var out []string
	for _, e := range strings.Split(sf.Tag.Get("env"), ",") {
		if e = strings.TrimSpace(e); e != "" {
			out = append(out, e)
		}
	}
	if len(out) == 0 {
		out = []string{EnvName(sf.Tag.Get("flag"))}
	}
	return out
}

// fromEnv reads a field's value from the first of its environment variables
// set, each also as NAME_FILE (a file holding the value), and says which
// it read. Two of them set to different values are an error: which one the
// operator meant is not for the program to guess.
func (f field) fromEnv(lookupEnv func(string) (string, bool)) (val, key string, ok bool, err error) {
	for _, name := range f.envs {
		v, set := lookupEnv(name)
		k := name
		if !set {
			path, fileSet := lookupEnv(name + "_FILE")
			if !fileSet {
				continue
			}
			b, err := readCapped(path, maxSecretBytes)
			if err != nil {
				return "", "", false, fmt.Errorf("config: unable to read %s_FILE: %w", name, err)
			}
			v, k = strings.TrimSpace(string(b)), name+"_FILE"
		}
		if !ok {
			val, key, ok = v, k, true
			continue
		}
		if v != val {
			return "", "", false, fmt.Errorf("config: %s and %s are both set, to different values: set only %s", key, k, f.envs[0])
		}
	}
	return val, key, ok, nil
}

// EnvName is the environment variable of a flag: BW_ + upper snake case.
func EnvName(flagName string) string {
	return EnvPrefix + strings.ToUpper(strings.ReplaceAll(flagName, "-", "_"))
}

func fieldsOf(cfg any) ([]field, error) {
	rv := reflect.ValueOf(cfg)
	if rv.Kind() != reflect.Pointer || rv.Elem().Kind() != reflect.Struct {
		return nil, errors.New("config: Load needs a pointer to a struct")
	}
	out := appendFields(nil, rv.Elem())
	seen := make(map[string]bool, len(out))
	for _, f := range out {
		if seen[f.name] {
			return nil, fmt.Errorf("config: flag %q is declared twice", f.name)
		}
		seen[f.name] = true
	}
	return out, nil
}

// appendFields appends the tagged fields of the struct rv, in order, those
// of an untagged struct field where it stands: an embedded one (the
// settings several programs share) or a named one (a source kind's own
// settings).
func appendFields(out []field, rv reflect.Value) []field {
	for i := 0; i < rv.NumField(); i++ {
		sf := rv.Type().Field(i)
		name := sf.Tag.Get("flag")
		if name == "" {
			if sf.Type.Kind() == reflect.Struct && (sf.Anonymous || sf.IsExported()) && sf.Type != reflect.TypeOf(time.Time{}) {
				out = appendFields(out, rv.Field(i))
			}
			continue
		}
		out = append(out, field{name: name, envs: EnvNames(sf), usage: sf.Tag.Get("usage"), secret: sf.Tag.Get("secret") == "true", v: rv.Field(i)})
	}
	return out
}

// Setting describes one setting of a struct, for documentation.
type Setting struct {
	Flag   string // without dashes
	Env    string // the documented environment variable
	Usage  string
	Secret bool // tagged secret:"true": a credential, best read from Env_FILE
}

// Describe lists the settings a tagged struct (a pointer to it) declares.
func Describe(cfg any) ([]Setting, error) {
	fields, err := fieldsOf(cfg)
	if err != nil {
		return nil, err
	}
	out := make([]Setting, len(fields))
	for i, f := range fields {
		out[i] = Setting{Flag: f.name, Env: f.envs[0], Usage: f.usage, Secret: f.secret}
	}
	return out, nil
}

func scanConfigFlag(args []string) string {
	for i, a := range args {
		if a == "--" {
			break
		}
		for _, p := range []string{"--config", "-config"} {
			if a == p && i+1 < len(args) {
				return args[i+1]
			}
			if strings.HasPrefix(a, p+"=") {
				return strings.TrimPrefix(a, p+"=")
			}
		}
	}
	return ""
}

func loadYAML(path string, fields []field) error {
	b, err := readCapped(path, maxYAMLBytes)
	if err != nil {
		return fmt.Errorf("config: unable to read %s: %w", path, err)
	}
	var raw map[string]yaml.Node
	if err := yaml.Unmarshal(b, &raw); err != nil {
		return fmt.Errorf("config: %s is not valid YAML: %w", path, err)
	}
	byName := make(map[string]field, len(fields))
	for _, f := range fields {
		byName[f.name] = f
	}
	for k, node := range raw {
		f, ok := byName[k]
		if !ok {
			return fmt.Errorf("config: %s: unknown setting %q", path, k)
		}
		var s string
		switch node.Kind {
		case yaml.ScalarNode:
			s = node.Value
		case yaml.SequenceNode:
			var items []string
			if err := node.Decode(&items); err != nil {
				return fmt.Errorf("config: %s: %s: %w", path, k, err)
			}
			s = strings.Join(items, ",")
		default:
			return fmt.Errorf("config: %s: %s must be a scalar or a list", path, k)
		}
		if err := (value{f.v}).Set(s); err != nil {
			return fmt.Errorf("config: %s: %s: %w", path, k, err)
		}
	}
	return nil
}

// readCapped reads a whole file of at most limit bytes.
func readCapped(path string, limit int64) ([]byte, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	b, err := io.ReadAll(io.LimitReader(f, limit+1))
	if err != nil {
		return nil, err
	}
	if int64(len(b)) > limit {
		return nil, fmt.Errorf("larger than %d bytes", limit)
	}
	return b, nil
}

// value adapts a struct field to flag.Value.
type value struct{ v reflect.Value }

func (f field) Set(s string) error { return value{f.v}.Set(s) }

func (v value) String() string {
	if !v.v.IsValid() {
		return ""
	}
	switch x := v.v.Interface().(type) {
	case []string:
		return strings.Join(x, ",")
	case time.Duration:
		return x.String()
	default:
		return fmt.Sprint(x)
	}
}

func (v value) IsBoolFlag() bool { return v.v.IsValid() && v.v.Kind() == reflect.Bool }

func (v value) Set(s string) error {
	switch v.v.Interface().(type) {
	case string:
		v.v.SetString(s)
	case bool:
		b, err := strconv.ParseBool(s)
		if err != nil {
			return fmt.Errorf("want true or false, got %q", s)
		}
		v.v.SetBool(b)
	case int, int64:
		n, err := strconv.ParseInt(s, 10, 64)
		if err != nil {
			return fmt.Errorf("want a whole number, got %q", s)
		}
		v.v.SetInt(n)
	case float64:
		x, err := strconv.ParseFloat(s, 64)
		if err != nil {
			return fmt.Errorf("want a number, got %q", s)
		}
		v.v.SetFloat(x)
	case time.Duration:
		d, err := time.ParseDuration(s)
		if err != nil {
			return fmt.Errorf("want a duration like 2s, got %q", s)
		}
		v.v.SetInt(int64(d))
	case []string:
		var items []string
		for _, p := range strings.Split(s, ",") {
			if p = strings.TrimSpace(p); p != "" {
				items = append(items, p)
			}
		}
		v.v.Set(reflect.ValueOf(items))
	default:
		return fmt.Errorf("unsupported setting type %s", v.v.Type())
	}
	return nil
}
