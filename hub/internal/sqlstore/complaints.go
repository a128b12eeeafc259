package sqlstore

import (
	"context"
	"fmt"
	"time"

	"gorm.io/gorm"
	"gorm.io/gorm/clause"
)

// Complaints: spawns that cannot reach the leader say so to a standby when
// they register there. A leader cut off from its spawns but not from the
// database still renews its leadership, so the lease alone would keep it
// leading over spawns it cannot reach; the standbys depose it when most of
// the spawns it knew complain about its term (cluster.Elector).

// complaintRow is a spawn's latest complaint.
type complaintRow struct {
	NodeID    string    `gorm:"primaryKey;size:64"`
	Term      uint64    `gorm:"not null"`
	LeaderURL string    `gorm:"size:2048;not null"`
	At        time.Time `gorm:"not null"`
}

func (complaintRow) TableName() string { return "leader_complaints" }

// Complain records that node could not reach the leader at leaderURL of
// term; a node's newer complaint replaces its older one.
func (s *Store) Complain(ctx context.Context, nodeID string, term uint64, leaderURL string) error {
	row := complaintRow{NodeID: nodeID, Term: term, LeaderURL: leaderURL, At: now()}
	err := s.db.WithContext(ctx).Clauses(clause.OnConflict{
		Columns:   []clause.Column{{Name: "node_id"}},
		DoUpdates: clause.AssignmentColumns([]string{"term", "leader_url", "at"}),
	}).Create(&row).Error
	if err != nil {
		return fmt.Errorf("sqlstore: unable to record the complaint of node %s: %w", nodeID, err)
	}
	return nil
}

// Complainants lists the nodes that complained about the leader of term
// at leaderURL since the given time.
func (s *Store) Complainants(ctx context.Context, term uint64, leaderURL string, since time.Time) ([]string, error) {
	var out []string
	err := s.db.WithContext(ctx).Model(&complaintRow{}).
		Where("term = ? AND leader_url = ? AND at >= ?", term, leaderURL, dbTime(since)).
		Order("node_id").Pluck("node_id", &out).Error
	if err != nil {
		return nil, fmt.Errorf("sqlstore: unable to read complaints: %w", err)
	}
	return out, nil
}

// complaintV9 is leader_complaints as migration 9 creates it.
type complaintV9 struct {
	NodeID    string    `gorm:"primaryKey;size:64"`
	Term      uint64    `gorm:"not null"`
	LeaderURL string    `gorm:"size:2048;not null"`
	At        time.Time `gorm:"not null"`
}

func (complaintV9) TableName() string { return "leader_complaints" }

func migrateV9(tx *gorm.DB) error {
	return tx.Migrator().CreateTable(&complaintV9{})
}
