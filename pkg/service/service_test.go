package service

import (
	"context"
	"errors"
	"testing"
	"time"
)

func TestService_FirstFailureStopsTheRestAndCleansUpOnce(t *testing.T) {
	boom := errors.New("boom")
	cleanups := 0
	stoppedByCtx := make(chan struct{})
	s := Start(context.Background(),
		func() error { cleanups++; return nil },
		func(ctx context.Context) error { <-ctx.Done(); close(stoppedByCtx); return nil },
		func(context.Context) error { return boom },
	)
	if err := s.Wait(); !errors.Is(err, boom) {
		t.Fatalf("Wait = %v, want boom", err)
	}
	select {
	case <-stoppedByCtx:
	default:
		t.Fatal("the other task was not stopped")
	}
	if cleanups != 1 {
		t.Fatalf("cleanup ran %d times", cleanups)
	}
}

func TestService_StopEndsTasksAndReportsCleanupError(t *testing.T) {
	closeErr := errors.New("close failed")
	s := Start(context.Background(),
		func() error { return closeErr },
		func(ctx context.Context) error { <-ctx.Done(); return nil },
	)
	done := make(chan error, 1)
	go func() { done <- s.Stop() }()
	select {
	case err := <-done:
		if !errors.Is(err, closeErr) {
			t.Fatalf("Stop = %v, want the cleanup error", err)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("Stop did not return")
	}
}
