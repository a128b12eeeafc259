package alert

import (
	"crypto/rand"
	"encoding/hex"
	"net/url"
	"os"
	"path/filepath"
	"testing"

	"gorm.io/driver/postgres"
	"gorm.io/gorm"
	gormlogger "gorm.io/gorm/logger"
)

// eachDB runs fn on SQLite (a temp file) and on PostgreSQL (a fresh
// database on the server BW_TEST_POSTGRES names, dropped afterwards), as
// subtests "sqlite" and "postgres". The PostgreSQL one is skipped when
// BW_TEST_POSTGRES is unset, unless BW_REQUIRE_SERVICES=1 makes that a
// failure.
func eachDB(t *testing.T, fn func(t *testing.T, dsn string)) {
	t.Helper()
	t.Run("sqlite", func(t *testing.T) { fn(t, "sqlite://"+filepath.Join(t.TempDir(), "hub.db")) })
	t.Run("postgres", func(t *testing.T) { fn(t, postgresDSN(t)) })
}

func postgresDSN(t *testing.T) string {
	t.Helper()
	base := os.Getenv("BW_TEST_POSTGRES")
	if base == "" {
		if os.Getenv("BW_REQUIRE_SERVICES") == "1" {
			t.Fatal("BW_TEST_POSTGRES is unset but BW_REQUIRE_SERVICES=1")
		}
		t.Skip("BW_TEST_POSTGRES is unset")
	}
	u, err := url.Parse(base)
	if err != nil {
		t.Fatalf("BW_TEST_POSTGRES: %v", err)
	}
	var b [6]byte
	_, _ = rand.Read(b[:])
	name := "bw_alert_" + hex.EncodeToString(b[:])
	admin := func(sql string) error {
		db, err := gorm.Open(postgres.Open(base), &gorm.Config{Logger: gormlogger.Discard})
		if err != nil {
			return err
		}
		defer func() {
			if sqlDB, err := db.DB(); err == nil {
				sqlDB.Close()
			}
		}()
		return db.Exec(sql).Error
	}
	if err := admin("CREATE DATABASE " + name); err != nil {
		t.Fatalf("create database %s: %v", name, err)
	}
	t.Cleanup(func() {
		if err := admin("DROP DATABASE IF EXISTS " + name + " WITH (FORCE)"); err != nil {
			t.Errorf("drop database %s: %v", name, err)
		}
	})
	u.Path = "/" + name
	return u.String()
}
