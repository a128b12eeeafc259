package sqlstore

import (
	"context"
	"errors"
	"fmt"
	"time"

	"gorm.io/gorm"
	"gorm.io/gorm/clause"
)

// The SQL of leadership among hubs sharing one database (package leader
// decides with it): the hub_leader row, which names the leading hub and
// its term, and the spawns' complaints about a leader they cannot reach.
// Why a row and not an advisory lock: docs/decisions/0002-leader-row.md.

// LeaderRow is the hub_leader row.
type LeaderRow struct {
	ID       int64  `gorm:"primaryKey;autoIncrement:false"`
	Term     uint64 `gorm:"not null"`
	Holder   string `gorm:"size:64;not null"`
	URL      string `gorm:"size:2048;not null"`
	Renewals uint64 `gorm:"not null"`
	// RenewedAt is for operators reading the table; no decision uses it.
	RenewedAt time.Time `gorm:"not null"`
}

func (LeaderRow) TableName() string { return "hub_leader" }

// leaderRowID is the id of the one row.
const leaderRowID = 1

// Leader reads the leadership row; ok is false when no hub ever led.
func (s *Store) Leader(ctx context.Context) (LeaderRow, bool, error) {
	var row LeaderRow
	err := s.db.WithContext(ctx).Where("id = ?", leaderRowID).Take(&row).Error
	if errors.Is(err, gorm.ErrRecordNotFound) {
		return LeaderRow{}, false, nil
	}
	if err != nil {
		return LeaderRow{}, false, fmt.Errorf("sqlstore: unable to read the leader: %w", err)
	}
	return row, true, nil
}

// TakeLeadership makes holder the leader with the next term if the row is
// still what the caller observed (seen false: no row at all). It reports
// the new row and whether the swap happened; another hub winning the race
// is not an error.
func (s *Store) TakeLeadership(ctx context.Context, observed LeaderRow, seen bool, holder, url string) (LeaderRow, bool, error) {
	row := LeaderRow{ID: leaderRowID, Term: observed.Term + 1, Holder: holder, URL: url, RenewedAt: now()}
	db := s.db.WithContext(ctx)
	var res *gorm.DB
	if !seen {
		res = db.Exec("INSERT INTO hub_leader (id, term, holder, url, renewals, renewed_at) VALUES (?, ?, ?, ?, 0, ?) ON CONFLICT (id) DO NOTHING",
			row.ID, row.Term, row.Holder, row.URL, row.RenewedAt)
	} else {
		res = db.Exec("UPDATE hub_leader SET term = ?, holder = ?, url = ?, renewals = 0, renewed_at = ? WHERE id = ? AND term = ? AND holder = ? AND renewals = ?",
			row.Term, row.Holder, row.URL, row.RenewedAt, row.ID, observed.Term, observed.Holder, observed.Renewals)
	}
	if res.Error != nil {
		return LeaderRow{}, false, fmt.Errorf("sqlstore: unable to take leadership: %w", res.Error)
	}
	return row, res.RowsAffected == 1, nil
}

// ForceLeadership makes holder the leader with the next term whatever the
// row says: a hub alone on its database (SQLite) always leads, and each of
// its starts still gets a new, higher term.
func (s *Store) ForceLeadership(ctx context.Context, holder, url string) (LeaderRow, error) {
	var out LeaderRow
	err := s.db.WithContext(ctx).Transaction(func(tx *gorm.DB) error {
		row, seen, err := (&Store{db: tx, dialect: s.dialect, logger: s.logger}).Leader(ctx)
		if err != nil {
			return err
		}
		var ok bool
		out, ok, err = (&Store{db: tx, dialect: s.dialect, logger: s.logger}).TakeLeadership(ctx, row, seen, holder, url)
		if err == nil && !ok {
			err = errors.New("sqlstore: the leader row changed inside a transaction")
		}
		return err
	})
	return out, err
}

// RenewLeadership extends holder's leadership of term. It reports false
// when another hub took over: the caller must stop leading at once.
func (s *Store) RenewLeadership(ctx context.Context, term uint64, holder string) (bool, error) {
	res := s.db.WithContext(ctx).Exec("UPDATE hub_leader SET renewals = renewals + 1, renewed_at = ? WHERE id = ? AND term = ? AND holder = ?",
		now(), leaderRowID, term, holder)
	if res.Error != nil {
		return false, fmt.Errorf("sqlstore: unable to renew leadership: %w", res.Error)
	}
	return res.RowsAffected == 1, nil
}

// ResignLeadership gives up holder's leadership of term, so a standby takes
// over at once instead of waiting for the lease to lapse. The term stays:
// the next leader's is higher.
func (s *Store) ResignLeadership(ctx context.Context, term uint64, holder string) error {
	res := s.db.WithContext(ctx).Exec("UPDATE hub_leader SET holder = '', url = '', renewed_at = ? WHERE id = ? AND term = ? AND holder = ?",
		now(), leaderRowID, term, holder)
	if res.Error != nil {
		return fmt.Errorf("sqlstore: unable to resign leadership: %w", res.Error)
	}
	return nil
}

// leaderV7 is hub_leader as migration 7 creates it.
type leaderV7 struct {
	ID        int64     `gorm:"primaryKey;autoIncrement:false"`
	Term      uint64    `gorm:"not null"`
	Holder    string    `gorm:"size:64;not null"`
	URL       string    `gorm:"size:2048;not null"`
	Renewals  uint64    `gorm:"not null"`
	RenewedAt time.Time `gorm:"not null"`
}

func (leaderV7) TableName() string { return "hub_leader" }

func migrateV7(tx *gorm.DB) error {
	return tx.Migrator().CreateTable(&leaderV7{})
}

// Complaints: spawns that cannot reach the leader say so to a standby when
// they register there; the standbys depose a leader most of its spawns
// complain about (leader.Elector).

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
