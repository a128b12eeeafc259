package sqlstore

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"time"

	"gorm.io/gorm"

	"github.com/blackwidow-crawl/blackwidow/api"
)

// Retraction is one entry of the log of what sources and operators took
// back (api.Retraction); its id is its position in the log, which the hub
// hands every spawn in order. The op, source and target (the comment id,
// or the author) are columns; the rest of the retraction is Body (JSON).
type Retraction struct {
	ID         int64     `gorm:"primaryKey"`
	Op         string    `gorm:"size:16;not null"`
	Source     string    `gorm:"size:16;not null"`
	Target     string    `gorm:"size:1024;not null"`
	Body       string    `gorm:"type:text;not null;default:''"`
	OriginNode string    `gorm:"size:64;not null;default:''"`
	At         time.Time `gorm:"not null"`
	CreatedAt  time.Time `gorm:"not null"`
}

// retractionBody is the part of a retraction kept in Body.
type retractionBody struct {
	Active   bool      `json:"active,omitempty"`
	Status   string    `json:"status,omitempty"`
	Text     string    `json:"text,omitempty"`
	Links    []string  `json:"links,omitempty"`
	EditedAt time.Time `json:"edited_at,omitzero"`
	Reason   string    `json:"reason,omitempty"`
}

// RetractionRow is the row of a retraction told by node (empty: the hub).
func RetractionRow(r api.Retraction, node string) (Retraction, error) {
	target := r.ID
	if r.Op == api.RetractAccount || r.Op == api.RetractForget {
		target = r.Author
	}
	if len(target) > 1024 || len(r.Source) > 16 || len(r.Op) > 16 {
		return Retraction{}, fmt.Errorf("%w: retraction target, source or op too long", ErrInvalid)
	}
	body, err := json.Marshal(retractionBody{Active: r.Active, Status: r.Status, Text: r.Text, Links: r.Links, EditedAt: r.EditedAt, Reason: r.Reason})
	if err != nil {
		return Retraction{}, fmt.Errorf("sqlstore: unable to encode a retraction: %w", err)
	}
	at := r.At
	if at.IsZero() {
		at = now()
	}
	return Retraction{Op: r.Op, Source: r.Source, Target: target, Body: string(body), OriginNode: node, At: dbTime(at)}, nil
}

// API is the retraction as the log hands it over, numbered by its id.
func (r Retraction) API() api.Retraction {
	var b retractionBody
	_ = json.Unmarshal([]byte(r.Body), &b) // a damaged body keeps the op and target
	out := api.Retraction{Seq: uint64(r.ID), Op: r.Op, Source: r.Source, At: r.At.UTC(),
		Active: b.Active, Status: b.Status, Text: b.Text, Links: b.Links, EditedAt: b.EditedAt, Reason: b.Reason}
	if r.Op == api.RetractAccount || r.Op == api.RetractForget {
		out.Author = r.Target
	} else {
		out.ID = r.Target
	}
	return out
}

// AppendRetractions logs rows in one transaction and returns them with
// their ids, in order.
func (s *Store) AppendRetractions(ctx context.Context, rows []Retraction) ([]Retraction, error) {
	if len(rows) == 0 {
		return nil, nil
	}
	created := now()
	for i := range rows {
		rows[i].ID, rows[i].CreatedAt = 0, created
	}
	err := s.db.WithContext(ctx).Transaction(func(tx *gorm.DB) error {
		for i := range rows {
			if err := tx.Create(&rows[i]).Error; err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("sqlstore: unable to log %d retractions: %w", len(rows), err)
	}
	return rows, nil
}

// RetractionsAfter reads up to limit log entries after id after, oldest
// first.
func (s *Store) RetractionsAfter(ctx context.Context, after int64, limit int) ([]Retraction, error) {
	var rows []Retraction
	if err := s.db.WithContext(ctx).Where("id > ?", after).Order("id").Limit(limit).Find(&rows).Error; err != nil {
		return nil, fmt.Errorf("sqlstore: unable to read retractions after %d: %w", after, err)
	}
	return rows, nil
}

// RetractionHead is the log's last id, 0 when it is empty.
func (s *Store) RetractionHead(ctx context.Context) (int64, error) {
	var head int64
	if err := s.db.WithContext(ctx).Model(&Retraction{}).Select("COALESCE(MAX(id), 0)").Scan(&head).Error; err != nil {
		return 0, fmt.Errorf("sqlstore: unable to read the retraction log's end: %w", err)
	}
	return head, nil
}

// PruneRetractions deletes the log entries logged before before and
// returns how many. Tombstones outlive no entry: a spawn that needs an
// older one applies none of them (they would have expired).
func (s *Store) PruneRetractions(ctx context.Context, before time.Time) (int64, error) {
	res := s.db.WithContext(ctx).Where("created_at < ?", dbTime(before)).Delete(&Retraction{})
	if res.Error != nil {
		return 0, fmt.Errorf("sqlstore: unable to prune retractions: %w", res.Error)
	}
	return res.RowsAffected, nil
}

// ComplianceRun records one compliance check of a source kind's stored
// items with its service (X's batch compliance): when, through which
// spawn, the service's job id, its outcome (running, completed, failed,
// expired, error), how many items were checked and how many of them the
// service reported gone.
type ComplianceRun struct {
	ID         int64     `gorm:"primaryKey"`
	Source     string    `gorm:"size:32;not null;default:''"`
	StartedAt  time.Time `gorm:"not null"`
	FinishedAt *time.Time
	Node       string `gorm:"size:64;not null;default:''"`
	JobID      string `gorm:"size:64;not null;default:''"`
	Status     string `gorm:"size:16;not null"`
	Checked    int64  `gorm:"not null;default:0"`
	Deleted    int64  `gorm:"not null;default:0"`
	Error      string `gorm:"size:500;not null;default:''"`
}

// StartComplianceRun records a run of a kind's check that begins now.
func (s *Store) StartComplianceRun(ctx context.Context, source, node string) (ComplianceRun, error) {
	run := ComplianceRun{Source: source, StartedAt: now(), Node: node, Status: "running"}
	if err := s.db.WithContext(ctx).Create(&run).Error; err != nil {
		return ComplianceRun{}, fmt.Errorf("sqlstore: unable to record a compliance run: %w", err)
	}
	return run, nil
}

// FinishComplianceRun records a run's outcome.
func (s *Store) FinishComplianceRun(ctx context.Context, run ComplianceRun) error {
	t := now()
	run.FinishedAt = &t
	if len(run.Error) > 500 {
		run.Error = run.Error[:500]
	}
	err := s.db.WithContext(ctx).Model(&ComplianceRun{}).Where("id = ?", run.ID).UpdateColumns(map[string]any{
		"finished_at": run.FinishedAt, "node": run.Node, "job_id": run.JobID, "status": run.Status,
		"checked": run.Checked, "deleted": run.Deleted, "error": run.Error,
	}).Error
	if err != nil {
		return fmt.Errorf("sqlstore: unable to record the outcome of compliance run %d: %w", run.ID, err)
	}
	return nil
}

// ComplianceRuns lists the latest runs, newest first.
func (s *Store) ComplianceRuns(ctx context.Context, limit int) ([]ComplianceRun, error) {
	var runs []ComplianceRun
	if err := s.db.WithContext(ctx).Order("id DESC").Limit(limit).Find(&runs).Error; err != nil {
		return nil, fmt.Errorf("sqlstore: unable to list compliance runs: %w", err)
	}
	return runs, nil
}

// maxScrubNeedles bounds the comment ids and authors one ScrubAlertSamples
// looks for.
const maxScrubNeedles = 2000

// ScrubAlertSamples takes the comments a retraction removed out of the
// samples alerts keep (what GET /v1/alerts/{id}/events and the dashboard
// show): those whose id is one of ids, and those of one of authors (by
// handle, or by an author id their comment id holds, as a Bluesky DID in
// an at:// URI). It returns how many alerts changed. Messages already
// delivered stay as they were sent.
func (s *Store) ScrubAlertSamples(ctx context.Context, ids, authors []string) (int, error) {
	type needle struct {
		text   string
		author bool
	}
	var needles []needle
	for _, id := range ids {
		if id != "" {
			needles = append(needles, needle{id, false})
		}
	}
	for _, a := range authors {
		if a != "" {
			needles = append(needles, needle{a, true})
		}
	}
	if len(needles) > maxScrubNeedles {
		needles = needles[:maxScrubNeedles]
	}
	changed := map[int64]bool{}
	for _, n := range needles {
		if err := ctx.Err(); err != nil {
			return len(changed), err
		}
		var rows []Alert
		pattern := "%" + likeEscape(n.text) + "%"
		if err := s.db.WithContext(ctx).Where(`details LIKE ? ESCAPE '\'`, pattern).Find(&rows).Error; err != nil {
			return len(changed), fmt.Errorf("sqlstore: unable to read alert samples: %w", err)
		}
		for _, a := range rows {
			var d map[string]json.RawMessage
			var sample []api.AlertSample
			if json.Unmarshal([]byte(a.Details), &d) != nil || json.Unmarshal(d["sample"], &sample) != nil {
				continue
			}
			kept := sample[:0:0]
			for _, sm := range sample {
				gone := sm.ID == n.text
				if n.author {
					gone = strings.EqualFold(sm.Author, n.text) || strings.Contains(sm.ID, n.text)
				}
				if !gone {
					kept = append(kept, sm)
				}
			}
			if len(kept) == len(sample) {
				continue
			}
			if kept == nil {
				kept = []api.AlertSample{}
			}
			d["sample"], _ = json.Marshal(kept)
			out, err := json.Marshal(d)
			if err != nil {
				continue
			}
			if err := s.db.WithContext(ctx).Model(&Alert{}).Where("id = ?", a.ID).Update("details", string(out)).Error; err != nil {
				return len(changed), fmt.Errorf("sqlstore: unable to scrub the samples of alert %d: %w", a.ID, err)
			}
			changed[a.ID] = true
		}
	}
	return len(changed), nil
}

// likeEscape escapes LIKE's wildcards (with \).
func likeEscape(s string) string {
	return strings.NewReplacer(`\`, `\\`, `%`, `\%`, `_`, `\_`).Replace(s)
}
