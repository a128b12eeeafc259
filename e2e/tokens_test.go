package e2e

import (
	"context"
	"path/filepath"
	"strings"
	"testing"

	"github.com/blackwidow-crawl/blackwidow/api"
	hubapp "github.com/blackwidow-crawl/blackwidow/hub/app"
	"github.com/blackwidow-crawl/blackwidow/internal/testkit"
	spawnapp "github.com/blackwidow-crawl/blackwidow/spawn/app"
)

// TestTokens_ServersRefuseWeakTokens: a token that is blank, shorter than 16
// bytes, or the same for the admin API and the node API keeps a hub or a
// spawn from starting, with an error naming the variable to fix.
func TestTokens_ServersRefuseWeakTokens(t *testing.T) {
	const good, other = "0123456789abcdef", "fedcba9876543210"
	cases := []struct {
		name        string
		node, admin string
		says        string
	}{
		{"blank node token", "   ", other, "BW_NODE_TOKEN (--node-token) is blank"},
		{"one-character admin token", good, "x", "BW_ADMIN_TOKEN (--admin-token) is 1 bytes long"},
		{"fifteen-byte node token", good[:15], other, "BW_NODE_TOKEN (--node-token) is 15 bytes long"},
		{"admin token equal to the node token", good, good, "BW_ADMIN_TOKEN (--admin-token) equals BW_NODE_TOKEN (--node-token)"},
	}
	ctx := context.Background()
	for _, tc := range cases {
		t.Run("hub: "+tc.name, func(t *testing.T) {
			cfg := hubapp.DefaultSettings()
			cfg.Listen = "127.0.0.1:0"
			cfg.DB = "sqlite://" + filepath.Join(t.TempDir(), "hub.db")
			cfg.NodeToken, cfg.AdminToken = tc.node, tc.admin
			h, err := hubapp.Start(ctx, cfg, testkit.Logger(t, "hub"))
			if err == nil {
				_ = h.Stop()
				t.Fatal("the hub started")
			}
			if !strings.Contains(err.Error(), tc.says) {
				t.Fatalf("error %q, want it to say %q", err, tc.says)
			}
		})
	}
	for _, tc := range cases[:3] {
		if tc.node == good {
			continue // the admin token is the hub's
		}
		t.Run("spawn: "+tc.name, func(t *testing.T) {
			cfg := spawnapp.DefaultSettings()
			cfg.Hub = "http://127.0.0.1:1"
			cfg.Store = "file://" + t.TempDir()
			cfg.NodeToken = tc.node
			s, err := spawnapp.Start(ctx, cfg, testkit.Logger(t, "spawn"))
			if err == nil {
				_ = s.Stop()
				t.Fatal("the spawn started")
			}
			if !strings.Contains(err.Error(), tc.says) {
				t.Fatalf("error %q, want it to say %q", err, tc.says)
			}
		})
	}
}

// TestTokens_SurroundingWhiteSpaceIsNotPartOfTheToken: a token set with a
// trailing newline (an environment variable filled from a file) is the same
// token as the one clients send.
func TestTokens_SurroundingWhiteSpaceIsNotPartOfTheToken(t *testing.T) {
	const node, admin = "0123456789abcdef-node", "0123456789abcdef-admin"
	cfg := hubapp.DefaultSettings()
	cfg.Listen = "127.0.0.1:0"
	cfg.DB = "sqlite://" + filepath.Join(t.TempDir(), "hub.db")
	cfg.NodeToken, cfg.AdminToken = node+"\n", " "+admin+"\n"
	h, err := hubapp.Start(context.Background(), cfg, testkit.Logger(t, "hub"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = h.Stop() })
	if _, err := api.NewClient(h.URL(), admin, nil).ListUsers(context.Background()); err != nil {
		t.Fatalf("the admin client with the trimmed token: %v", err)
	}
}
