package cassandra

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"strconv"

	"github.com/gocql/gocql"
)

// Applied reads the hub log's highest retraction applied to the keyspace.
func (s *Store) Applied(ctx context.Context) (uint64, error) {
	var v string
	err := s.session.Query(`SELECT value FROM `+s.cfg.Keyspace+`.store_info WHERE name = ?`, appliedRow).
		WithContext(ctx).Idempotent(true).Scan(&v)
	if errors.Is(err, gocql.ErrNotFound) {
		return 0, nil
	}
	if err != nil {
		return 0, fmt.Errorf("cassandra: read the applied mark: %w", err)
	}
	n, err := strconv.ParseUint(v, 10, 64)
	if err != nil {
		return 0, fmt.Errorf("cassandra: the applied mark %q is not a number", v)
	}
	return n, nil
}

// SetApplied raises the applied mark to seq. Two spawns raising it at
// once may leave the lower of their marks: the retractions between are
// then applied again, which changes nothing.
func (s *Store) SetApplied(ctx context.Context, seq uint64) error {
	cur, err := s.Applied(ctx)
	if err != nil || cur >= seq {
		return err
	}
	q := s.session.Query(`INSERT INTO `+s.cfg.Keyspace+`.store_info (name, value) VALUES (?, ?)`, appliedRow, strconv.FormatUint(seq, 10)).
		WithContext(ctx).Idempotent(true)
	defer q.Release()
	if err := q.Exec(); err != nil {
		return fmt.Errorf("cassandra: write the applied mark: %w", err)
	}
	return nil
}

// ID names the keyspace's store for the hub.
func (s *Store) ID() string { return s.id }

// loadID reads the keyspace's id, making it on first use (the first spawn
// to insert it wins).
func (s *Store) loadID(ctx context.Context) error {
	var raw [16]byte
	if _, err := rand.Read(raw[:]); err != nil {
		return fmt.Errorf("cassandra: make a store id: %w", err)
	}
	q := s.session.Query(`INSERT INTO `+s.cfg.Keyspace+`.store_info (name, value) VALUES (?, ?) IF NOT EXISTS`, idRow, hex.EncodeToString(raw[:])).
		WithContext(ctx)
	if _, err := q.MapScanCAS(map[string]any{}); err != nil {
		q.Release()
		return fmt.Errorf("cassandra: record the store id: %w", err)
	}
	q.Release()
	var v string
	if err := s.session.Query(`SELECT value FROM `+s.cfg.Keyspace+`.store_info WHERE name = ?`, idRow).
		WithContext(ctx).Consistency(gocql.Consistency(gocql.Serial)).Scan(&v); err != nil {
		return fmt.Errorf("cassandra: read the store id: %w", err)
	}
	s.id = "cassandra:" + s.cfg.Keyspace + ":" + v
	return nil
}
