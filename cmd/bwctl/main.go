// Command bwctl is the admin CLI of Black Widow: it manages users and
// crawlers, lists spawn nodes, triggers reloads and shows recent comments,
// all through the hub's admin API (never the database: the hub owns SQL).
//
// Run "bwctl help" for the commands.
package main

import (
	"context"
	"os"
	"os/signal"
	"syscall"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	code := run(ctx, os.Args[1:], os.Stdout, os.Stderr, os.Getenv)
	stop()
	os.Exit(code)
}
