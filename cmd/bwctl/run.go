package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"regexp"
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

// flagSpecs lists every flag bwctl knows and whether it takes a value. A
// flag means the same in every command, so the command line is parsed in one
// pass, flags anywhere, before the command is known.
var flagSpecs = map[string]bool{
	// global
	"hub": true, "token": true, "timeout": true, "json": false, "help": false, "h": false, "config": true, "ca": true,
	// per command
	"limit": true, "user": true, "source": true, "query": true, "keywords": true,
	"disabled": false, "n": true, "hard": false, "soft": false,
	"since": true, "until": true, "format": true,
	// alert (alert.go)
	"crawler": true, "kind": true, "sensitivity": true, "webhook": true, "secret": true, "slack": true, "email": true, "csv": true,
}

// globalFlags are accepted by every command.
var globalFlags = []string{"hub", "token", "timeout", "json", "help", "h", "config", "ca"}

// line is a parsed command line: positional words and flags.
type line struct {
	words []string
	flags map[string]string // name → value; "true"/"false" for switches
}

func (l line) has(name string) bool { _, ok := l.flags[name]; return ok }

func (l line) on(name string) bool { return l.flags[name] == "true" }

var negativeNumber = regexp.MustCompile(`^-[0-9]+$`)

// parseLine splits args into words and flags. Flags may come anywhere, as
// -name or --name, with their value as the next argument or after "=". "--"
// ends the flags. A negative number is a word, not a flag.
func parseLine(args []string) (line, error) {
	l := line{flags: map[string]string{}}
	for i := 0; i < len(args); i++ {
		a := args[i]
		if a == "--" {
			l.words = append(l.words, args[i+1:]...)
			break
		}
		if len(a) < 2 || a[0] != '-' || negativeNumber.MatchString(a) {
			l.words = append(l.words, a)
			continue
		}
		name := strings.TrimPrefix(a[1:], "-")
		name, val, hasVal := strings.Cut(name, "=")
		takesValue, known := flagSpecs[name]
		if !known {
			return line{}, usagef("unknown flag %s (run 'bwctl help')", quote(a))
		}
		switch {
		case takesValue && !hasVal:
			if i+1 >= len(args) {
				return line{}, usagef("flag --%s needs a value", name)
			}
			i++
			val = args[i]
		case !takesValue && hasVal:
			b, err := strconv.ParseBool(val)
			if err != nil {
				return line{}, usagef("flag --%s is a switch: give it alone or as --%s=true|false", name, name)
			}
			val = strconv.FormatBool(b)
		case !takesValue:
			val = "true"
		}
		l.flags[name] = val
	}
	return l, nil
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
	c, cmd, words, l, err := setup(ctx, args, stdout, env)
	if err == nil && cmd == nil {
		printUsage(stdout)
		return exitOK
	}
	if err == nil {
		c.errOut = stderr
		if !cmd.stream {
			var cancel context.CancelFunc
			c.ctx, cancel = context.WithTimeout(ctx, c.timeout)
			defer cancel()
		}
		err = cmd.run(c, words, l)
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
// nil error means help was asked for.
func setup(ctx context.Context, args []string, stdout io.Writer, env func(string) string) (*cli, *command, []string, line, error) {
	l, err := parseLine(args)
	if err != nil {
		return nil, nil, nil, line{}, err
	}
	if l.on("help") || l.on("h") || (len(l.words) > 0 && l.words[0] == "help") {
		return nil, nil, nil, l, nil
	}
	if len(l.words) == 0 {
		return nil, nil, nil, l, usagef("no command given (run 'bwctl help')")
	}
	cmd, rest, err := lookup(l.words)
	if err != nil {
		return nil, nil, nil, l, err
	}
	for name := range l.flags {
		if !slices.Contains(globalFlags, name) && !slices.Contains(cmd.flags, name) {
			return nil, nil, nil, l, usagef("%s does not take --%s (usage: bwctl %s)", cmd.name(), name, cmd.synopsis())
		}
	}
	if (!cmd.varArgs && len(rest) != len(cmd.args)) || (cmd.varArgs && len(rest) < cmd.minArgs) {
		return nil, nil, nil, l, usagef("usage: bwctl %s", cmd.synopsis())
	}
	// Settings: flags, then the environment, then the --config file, then
	// the defaults, through the loader every binary uses.
	st := settings{Hub: defaultHubURL}
	var globals []string
	for _, name := range globalFlags {
		if v, ok := l.flags[name]; ok && name != "help" && name != "h" {
			globals = append(globals, "--"+name+"="+v)
		}
	}
	lookup := func(k string) (string, bool) { v := env(k); return v, v != "" }
	if err := config.Load("bwctl", &st, globals, lookup, io.Discard); err != nil {
		return nil, nil, nil, l, err
	}
	c := &cli{ctx: ctx, out: stdout, json: st.JSON, token: st.Token, timeout: defaultTimeout}
	if c.hubURL, err = hubURL(st.Hub); err != nil {
		return nil, nil, nil, l, err
	}
	if st.Timeout != "" {
		if c.timeout, err = parseTimeout(st.Timeout); err != nil {
			return nil, nil, nil, l, err
		}
	}
	httpClient := &http.Client{}
	if st.CA != "" {
		tlsCfg, err := httpx.ClientTLS(httpx.TLSFiles{CA: st.CA})
		if err != nil {
			return nil, nil, nil, l, usagef("--ca: %v", err)
		}
		httpClient.Transport = &http.Transport{TLSClientConfig: tlsCfg, Proxy: http.ProxyFromEnvironment}
	}
	c.client = api.NewClient(c.hubURL, c.token, httpClient)
	return c, cmd, rest, l, nil
}

// settings are bwctl's global settings; a --config YAML file sets them by
// flag name.
type settings struct {
	Hub     string `flag:"hub" env:"BW_HUB_URL" usage:"the hub's URL, or several hubs' comma-separated"`
	CA      string `flag:"ca" usage:"PEM CA that signs the hubs' HTTPS certificates (default: the system's roots)"`
	Token   string `flag:"token" env:"BW_ADMIN_TOKEN" usage:"the admin token (or BW_ADMIN_TOKEN_FILE)"`
	Timeout string `flag:"timeout" usage:"how long one command may take: a duration like 10s or seconds"`
	JSON    bool   `flag:"json" usage:"print JSON documents instead of tables"`
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
