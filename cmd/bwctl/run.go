package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/blackwidow-crawl/blackwidow/api"
	"github.com/blackwidow-crawl/blackwidow/pkg/config"
	"github.com/blackwidow-crawl/blackwidow/pkg/httpx"
)

// Defaults of the global flags.
const (
	defaultHubURL = "http://127.0.0.1:8700"
	// defaultTimeout bounds one bwctl invocation: every command is one or
	// two quick admin calls.
	defaultTimeout = 10 * time.Second
)

// Exit codes.
const (
	exitOK    = 0
	exitFail  = 1 // the hub refused or could not be reached
	exitUsage = 2 // the command line is wrong
)

// usageError is a mistake on the command line (exit 2).
type usageError struct{ msg string }

func (e *usageError) Error() string { return e.msg }

func usagef(format string, args ...any) error {
	return &usageError{msg: fmt.Sprintf(format, args...)}
}

// globalFlags are accepted by every command, anywhere on the line. All but
// help and config are settings (the settings struct), read through the
// loader every binary uses: flags, then the environment, then the
// --config file, then the defaults.
var globalFlags = []flagSpec{
	{name: "hub", arg: "URL[,URL]", usage: "the hub's admin API; several hubs sharing a database: the leader is found", def: defaultHubURL},
	{name: "ca", arg: "FILE", usage: "PEM CA of the hubs' HTTPS certificates", def: "the system's roots"},
	{name: "token", arg: "TOKEN", usage: "admin token; BW_ADMIN_TOKEN_FILE may name a file that holds it"},
	{name: "json", usage: "print the API object(s) as JSON"},
	{name: "timeout", arg: "DUR", usage: "give up after DUR, a duration like 10s or seconds", def: defaultTimeout.String()},
	{name: "config", arg: "FILE", usage: "YAML file with any of the keys " + strings.Join(settingNames(), ", ") +
		"; flags override the environment, which overrides the file"},
	{name: "help", short: "h", usage: "show the help, or a command's"},
}

// cli is one bwctl invocation.
type cli struct {
	ctx     context.Context
	out     io.Writer
	errOut  io.Writer // progress of stream commands
	client  *api.Client
	hubURL  string
	token   string
	timeout time.Duration
	json    bool
}

// run executes one bwctl command line and returns the exit code. It writes
// results to stdout and, on failure, one line "bwctl: <reason>" to stderr.
func run(ctx context.Context, args []string, stdout, stderr io.Writer, env func(string) string) (code int) {
	defer func() {
		// No input may crash bwctl; a bug still ends with one line.
		if v := recover(); v != nil {
			fmt.Fprintf(stderr, "bwctl: internal error: %v\n", v)
			code = exitFail
		}
	}()
	if env == nil {
		env = func(string) string { return "" }
	}
	c, cmd, in, err := setup(ctx, args, stdout, stderr, env)
	if err == nil && cmd == nil {
		return exitOK // help was printed
	}
	if err == nil {
		if !cmd.stream {
			var cancel context.CancelFunc
			c.ctx, cancel = context.WithTimeout(ctx, c.timeout)
			defer cancel()
		}
		err = cmd.run(c, in)
	}
	if err == nil {
		return exitOK
	}
	var ue *usageError
	if errors.As(err, &ue) {
		fmt.Fprintf(stderr, "bwctl: %s\n", oneLine(ue.msg))
		return exitUsage
	}
	fmt.Fprintf(stderr, "bwctl: %s\n", oneLine(describe(err, c)))
	return exitFail
}

// setup parses the command line and the environment. A nil command with a
// nil error means help was asked for and printed.
func setup(ctx context.Context, args []string, stdout, stderr io.Writer, env func(string) string) (*cli, *command, *input, error) {
	words, given, err := scan(args)
	if err != nil {
		return nil, nil, nil, err
	}
	if slices.ContainsFunc(given, func(g givenFlag) bool { return g.name == "help" && g.value == "true" }) {
		printHelp(stdout, words)
		return nil, nil, nil, nil
	}
	if len(words) > 0 && words[0] == "help" {
		printHelp(stdout, words[1:])
		return nil, nil, nil, nil
	}
	if len(words) == 0 {
		return nil, nil, nil, usagef("no command given (run 'bwctl help')")
	}
	cmd, rest, err := lookup(words)
	if err != nil {
		return nil, nil, nil, err
	}
	in, globals, err := bind(cmd, rest, given)
	if err != nil {
		return nil, nil, nil, err
	}
	c := &cli{ctx: ctx, out: stdout, errOut: stderr, timeout: defaultTimeout}
	if cmd.standalone {
		return c, cmd, in, nil
	}
	st := settings{Hub: defaultHubURL}
	lookupEnv := func(k string) (string, bool) { v := env(k); return v, v != "" }
	if err := config.Load("bwctl", &st, globals, lookupEnv, io.Discard); err != nil {
		return nil, nil, nil, err
	}
	c.json, c.token = st.JSON, st.Token
	if cmd.local {
		return c, cmd, in, nil
	}
	if c.hubURL, err = hubURL(st.Hub); err != nil {
		return nil, nil, nil, err
	}
	if st.Timeout != "" {
		if c.timeout, err = parseTimeout(st.Timeout); err != nil {
			return nil, nil, nil, err
		}
	}
	httpClient := &http.Client{}
	if st.CA != "" {
		tlsCfg, err := httpx.ClientTLS(httpx.TLSFiles{CA: st.CA})
		if err != nil {
			return nil, nil, nil, usagef("--ca: %v", err)
		}
		httpClient.Transport = &http.Transport{TLSClientConfig: tlsCfg, Proxy: http.ProxyFromEnvironment}
	}
	c.client = api.NewClient(c.hubURL, c.token, httpClient)
	return c, cmd, in, nil
}

// settings are bwctl's global settings; a --config YAML file sets them by
// flag name. Their help is globalFlags'.
type settings struct {
	Hub     string `flag:"hub" env:"BW_HUB_URL,BW_HUB"`
	CA      string `flag:"ca"`
	Token   string `flag:"token" env:"BW_ADMIN_TOKEN"`
	JSON    bool   `flag:"json"`
	Timeout string `flag:"timeout"`
}

// settingNames are the names of the settings, the keys of a --config file.
func settingNames() []string {
	t := reflect.TypeFor[settings]()
	names := make([]string, 0, t.NumField())
	for i := range t.NumField() {
		names = append(names, t.Field(i).Tag.Get("flag"))
	}
	return names
}

// settingEnv is the environment variable a global flag reads (the one
// documented, when it reads several), or "".
func settingEnv(name string) string {
	if name == "config" {
		return config.EnvPrefix + "CONFIG"
	}
	t := reflect.TypeFor[settings]()
	for i := range t.NumField() {
		if f := t.Field(i); f.Tag.Get("flag") == name {
			return config.EnvNames(f)[0]
		}
	}
	return ""
}

// hubURL checks --hub: one URL or several, comma-separated (hubs sharing
// a database; the client finds the leader). A bare host:port means http.
func hubURL(s string) (string, error) {
	var out []string
	for _, raw := range strings.Split(s, ",") {
		one := strings.TrimSpace(raw)
		if !strings.Contains(one, "://") {
			one = "http://" + one
		}
		u, err := url.Parse(one)
		if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Hostname() == "" || u.RawQuery != "" || u.Fragment != "" {
			return "", usagef("hub URL %s must look like http://host:port", quote(raw))
		}
		out = append(out, strings.TrimRight(u.String(), "/"))
	}
	return strings.Join(out, ","), nil
}

// parseTimeout reads a Go duration ("10s", "1m") or a number of seconds.
func parseTimeout(s string) (time.Duration, error) {
	d, err := time.ParseDuration(s)
	if err != nil {
		n, nerr := strconv.ParseFloat(s, 64)
		if nerr != nil {
			return 0, usagef("--timeout %s is not a duration like 10s", quote(s))
		}
		d = time.Duration(n * float64(time.Second))
	}
	if d <= 0 {
		return 0, usagef("--timeout must be positive, got %s", quote(s))
	}
	return d, nil
}

// displayURL hides a password in a URL shown to the operator.
func displayURL(s string) string {
	u, err := url.Parse(s)
	if err != nil {
		return s
	}
	return u.Redacted()
}

// describe turns an error into the reason bwctl prints.
func describe(err error, c *cli) string {
	hub := defaultHubURL
	var timeout time.Duration
	if c != nil {
		hub, timeout = displayURL(c.hubURL), c.timeout
	}
	var (
		se     *api.StatusError
		dnsErr *net.DNSError
		opErr  *net.OpError
		urlErr *url.Error
	)
	switch {
	case errors.As(err, &se):
		reason := fmt.Sprintf("%s (%d)", se.Message, se.Code)
		if se.Code == http.StatusUnauthorized {
			if c == nil || c.token == "" {
				reason += ": no admin token given, set BW_ADMIN_TOKEN or --token"
			} else {
				reason += ": the hub refused the admin token"
			}
		}
		return reason
	case errors.Is(err, context.DeadlineExceeded):
		return fmt.Sprintf("hub at %s did not answer within %s", hub, timeout)
	case errors.Is(err, context.Canceled):
		return "interrupted"
	case errors.Is(err, syscall.ECONNREFUSED):
		return fmt.Sprintf("hub unreachable at %s: connection refused", hub)
	case errors.As(err, &dnsErr):
		return fmt.Sprintf("hub unreachable at %s: unknown host %s", hub, dnsErr.Name)
	case errors.As(err, &opErr) && opErr.Op == "dial":
		return fmt.Sprintf("hub unreachable at %s: %v", hub, opErr.Err)
	case errors.As(err, &urlErr):
		return fmt.Sprintf("request to the hub at %s failed: %v", hub, urlErr.Err)
	default:
		return err.Error()
	}
}
