package sqlstore

import (
	"context"
	"fmt"
	"time"

	"gorm.io/gorm/clause"
)

// KnownNode is a spawn the hub has served. A restarted hub contacts the
// nodes its predecessor knew, so they notice the new epoch and register at
// once instead of waiting to detach.
type KnownNode struct {
	ID     string    `gorm:"primaryKey;size:64"`
	URL    string    `gorm:"size:2048;not null"`
	SeenAt time.Time `gorm:"not null"`
}

// RememberNode records (or refreshes) a registered node.
func (s *Store) RememberNode(ctx context.Context, id, url string) error {
	n := KnownNode{ID: id, URL: url, SeenAt: now()}
	err := s.db.WithContext(ctx).Clauses(clause.OnConflict{
		Columns:   []clause.Column{{Name: "id"}},
		DoUpdates: clause.AssignmentColumns([]string{"url", "seen_at"}),
	}).Create(&n).Error
	if err != nil {
		return fmt.Errorf("sqlstore: unable to remember node %s: %w", id, err)
	}
	return nil
}

// ForgetNode removes a node the hub lost.
func (s *Store) ForgetNode(ctx context.Context, id string) error {
	if err := s.db.WithContext(ctx).Delete(&KnownNode{}, "id = ?", id).Error; err != nil {
		return fmt.Errorf("sqlstore: unable to forget node %s: %w", id, err)
	}
	return nil
}

// KnownNodes lists the remembered nodes.
func (s *Store) KnownNodes(ctx context.Context) ([]KnownNode, error) {
	var out []KnownNode
	if err := s.db.WithContext(ctx).Order("id").Find(&out).Error; err != nil {
		return nil, fmt.Errorf("sqlstore: unable to list known nodes: %w", err)
	}
	return out, nil
}
