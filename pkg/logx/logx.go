// Package logx builds the slog logger every binary uses, from two settings.
package logx

import (
	"fmt"
	"io"
	"log/slog"
	"strings"

	"github.com/blackwidow-crawl/blackwidow/pkg/redact"
)

// New returns a logger writing text or JSON at the given level. Every line
// goes through redact.Handler: no URL's query string or credentials reach a
// log, whoever logged it.
func New(w io.Writer, level, format string) (*slog.Logger, error) {
	var lv slog.Level
	if err := lv.UnmarshalText([]byte(level)); err != nil {
		return nil, fmt.Errorf("logx: log level must be debug, info, warn or error, got %q", level)
	}
	opts := &slog.HandlerOptions{Level: lv}
	switch strings.ToLower(format) {
	case "", "text":
		return slog.New(redact.NewHandler(slog.NewTextHandler(w, opts))), nil
	case "json":
		return slog.New(redact.NewHandler(slog.NewJSONHandler(w, opts))), nil
	}
	return nil, fmt.Errorf("logx: log format must be text or json, got %q", format)
}
