package source

import (
	"context"
	"fmt"
	"log/slog"
	"net/http"
	"time"

	"github.com/blackwidow-crawl/blackwidow/api"
	"github.com/blackwidow-crawl/blackwidow/pkg/config"
	"github.com/blackwidow-crawl/blackwidow/pkg/netguard"
)

// Driver is one source kind as the spawn's settings hold it: its settings
// struct (tagged fields, one flag each, read by pkg/config) declares the
// kind and builds it. Each source package has one; spawn/app lists them,
// one line each, and nothing else in the spawn, the hub, the stores or
// bwctl names a kind: they ask its declaration (api.SourceInfo).
type Driver interface {
	// Info declares the kind as the settings configure it.
	Info() api.SourceInfo
	// Build returns the kind as configured: a stand-in (Unconfigured)
	// when the settings leave it off, an error when they are wrong (half
	// of a set of credentials).
	Build(deps Deps) (Kind, error)
}

// Defaulter is implemented by a Driver whose settings have defaults other
// than the zero value; the spawn applies them before reading its
// configuration, so help shows them.
type Defaulter interface {
	SetDefaults()
}

// Deps is what the spawn hands every kind it builds.
type Deps struct {
	// Guard is the spawn's policy for crawl targets (--allow-targets):
	// every URL that comes from crawl input or from a service's answer is
	// fetched through a client that enforces it.
	Guard  netguard.Options
	Logger *slog.Logger
}

// Client returns an HTTP client held to the crawl-target guard.
func (d Deps) Client() *http.Client { return netguard.NewClient(d.Guard) }

// Log returns the logger of a kind, tagged with its name.
func (d Deps) Log(kind string) *slog.Logger {
	l := d.Logger
	if l == nil {
		l = slog.Default()
	}
	return l.With("source", kind)
}

// Checked is the answer of a Rechecker: the service's job (if it runs
// one) and the items it reports gone.
type Checked struct {
	JobID  string
	Status string
	// Gone maps a comment id (in the kind's id space, with its prefix)
	// to why the service no longer has it.
	Gone map[string]string
}

// Rechecker is implemented by a Kind whose service says, for stored items,
// which are gone (X's batch compliance): the declaration's Recheck says
// how often the hub asks for it. ids are comment ids of the kind
// (api.SourceInfo.IDPrefix included). Recheck returns what it learned even
// when err is not nil.
type Rechecker interface {
	Recheck(ctx context.Context, ids []string) (Checked, error)
}

// Build builds the registry of the kinds drivers configure, and returns
// their declarations too (every kind, offered or not).
func Build(drivers []Driver, deps Deps) (Registry, []api.SourceInfo, error) {
	reg := make(Registry, len(drivers))
	infos := make([]api.SourceInfo, 0, len(drivers))
	for _, d := range drivers {
		info := d.Info()
		if err := info.Validate(); err != nil {
			return nil, nil, fmt.Errorf("spawn: %w", err)
		}
		if _, dup := reg[info.Name]; dup {
			return nil, nil, fmt.Errorf("spawn: source %s is declared twice", info.Name)
		}
		k, err := d.Build(deps)
		if err != nil {
			return nil, nil, fmt.Errorf("spawn: %w", err)
		}
		reg[info.Name] = k
		infos = append(infos, info)
	}
	return reg, infos, nil
}

// Days is a number of days as a duration, for declarations.
func Days(n int) api.Duration { return api.Duration(time.Duration(n) * 24 * time.Hour) }

// SettingsOf lists the settings a driver's tagged settings struct (a
// pointer to it) declares, for its declaration.
func SettingsOf(settings any) []api.SourceSetting {
	list, err := config.Describe(settings)
	if err != nil {
		panic(fmt.Sprintf("source: settings of a driver: %v", err)) // a programming error, caught by every test that builds a spawn
	}
	out := make([]api.SourceSetting, len(list))
	for i, s := range list {
		out[i] = api.SourceSetting{Flag: s.Flag, Env: s.Env, Usage: s.Usage, Secret: s.Secret}
	}
	return out
}
