// Package service runs a server's long-lived parts together and gives the
// hub and the spawn one shape of life: start, stop on a signal or on the
// first failure, clean up once, report why it stopped.
package service

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"os/signal"
	"strings"
	"sync"
	"syscall"

	"github.com/blackwidow-crawl/blackwidow/pkg/config"
	"github.com/blackwidow-crawl/blackwidow/pkg/logx"
)

// Service is a set of tasks running until ctx ends, Stop is called or one of
// them fails.
type Service struct {
	stop context.CancelFunc
	done chan struct{}
	mu   sync.Mutex
	err  error
}

// Start runs every task with a context that ends when the service stops,
// and, once all have returned, cleanup.
func Start(ctx context.Context, cleanup func() error, tasks ...func(context.Context) error) *Service {
	ctx, stop := context.WithCancel(ctx)
	s := &Service{stop: stop, done: make(chan struct{})}
	var wg sync.WaitGroup
	for _, task := range tasks {
		wg.Add(1)
		go func() {
			defer wg.Done()
			s.record(task(ctx))
		}()
	}
	go func() {
		wg.Wait()
		if cleanup != nil {
			s.record(cleanup())
		}
		close(s.done)
	}()
	return s
}

// record keeps the first error and stops the other tasks.
func (s *Service) record(err error) {
	if err == nil {
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.err == nil {
		s.err = err
		s.stop()
	}
}

// Stop ends the service and waits for it.
func (s *Service) Stop() error {
	s.stop()
	return s.Wait()
}

// Wait blocks until the service has stopped and returns why it stopped.
func (s *Service) Wait() error {
	<-s.done
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.err
}

// Settings is what Main needs of a binary's settings struct.
type Settings interface {
	Logging() (level, format string)
}

// Main is a binary's whole main: load settings (defaults, file,
// environment, flags), build the logger, start the server, and stop it on
// SIGINT or SIGTERM. It exits non-zero with one line on failure.
func Main[S Settings](name string, cfg S, start func(context.Context, S, *slog.Logger) (*Service, error)) {
	err := func() error {
		if err := config.Load(name, cfg, os.Args[1:], os.LookupEnv, os.Stderr); err != nil {
			return err
		}
		level, format := cfg.Logging()
		logger, err := logx.New(os.Stderr, level, format)
		if err != nil {
			return err
		}
		ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
		defer stop()
		s, err := start(ctx, cfg, logger)
		if err != nil {
			return err
		}
		return s.Wait()
	}()
	if err != nil {
		if errors.Is(err, config.ErrHelp) {
			os.Exit(0)
		}
		msg := err.Error()
		if !strings.HasPrefix(msg, name+":") {
			msg = name + ": " + msg
		}
		fmt.Fprintln(os.Stderr, msg)
		os.Exit(1)
	}
}
