package sqlstore

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"unicode"
	"unicode/utf8"

	"gorm.io/gorm"
	"gorm.io/gorm/clause"

	"github.com/blackwidow-crawl/blackwidow/api"
)

// CreateCrawler stores a new crawler and returns it with its id. The caller
// fills Query, Keywords and QueryUUID in canonical form (pkg/query); the
// store checks they are present, that the source is known and that the user
// exists. Version starts at 1, Usage at 0; Enabled is kept as given (gorm
// would otherwise turn a false into the column default, true).
func (s *Store) CreateCrawler(ctx context.Context, c Crawler) (Crawler, error) {
	row := Crawler{
		UserID: c.UserID, Name: c.Name, Source: c.Source, Query: c.Query, Keywords: c.Keywords,
		QueryUUID: c.QueryUUID, CommentLimit: c.CommentLimit, Enabled: c.Enabled, Version: 1,
		RetentionSeconds: c.RetentionSeconds,
	}
	if row.UserID <= 0 {
		return Crawler{}, fmt.Errorf("%w: user id must be positive, got %d", ErrInvalid, row.UserID)
	}
	if err := s.validCrawler(&row); err != nil {
		return Crawler{}, err
	}
	enabled := row.Enabled
	err := s.db.WithContext(ctx).Transaction(func(tx *gorm.DB) error {
		seq, err := nextChangeTx(tx)
		if err != nil {
			return err
		}
		row.ChangeSeq = seq
		var n int64
		if err := tx.Model(&User{}).Where("id = ?", row.UserID).Count(&n).Error; err != nil {
			return err
		}
		if n == 0 {
			return fmt.Errorf("%w: user %d does not exist", ErrInvalid, row.UserID)
		}
		if err := tx.Create(&row).Error; err != nil {
			if errors.Is(err, gorm.ErrForeignKeyViolated) {
				return fmt.Errorf("%w: user %d does not exist", ErrInvalid, row.UserID)
			}
			return err
		}
		if !enabled {
			row.Enabled = false
			return tx.Model(&Crawler{}).Where("id = ?", row.ID).UpdateColumn("enabled", false).Error
		}
		return nil
	})
	if err != nil {
		if errors.Is(err, ErrInvalid) {
			return Crawler{}, err
		}
		return Crawler{}, fmt.Errorf("sqlstore: unable to create crawler: %w", err)
	}
	return row, nil
}

// GetCrawler reads one crawler; ErrNotFound when the id does not exist.
func (s *Store) GetCrawler(ctx context.Context, id int64) (Crawler, error) {
	var c Crawler
	if err := s.db.WithContext(ctx).Take(&c, "id = ?", id).Error; err != nil {
		return Crawler{}, fmt.Errorf("sqlstore: unable to read crawler %d: %w", id, notFound(err))
	}
	return c, nil
}

// ListCrawlersAfter lists up to limit crawlers whose id is above after, by
// id: one page of the list, for fleets too large to list at once.
func (s *Store) ListCrawlersAfter(ctx context.Context, after int64, limit int) ([]Crawler, error) {
	crawlers := []Crawler{}
	if err := s.db.WithContext(ctx).Where("id > ?", after).Order("id").Limit(limit).Find(&crawlers).Error; err != nil {
		return nil, fmt.Errorf("sqlstore: unable to list crawlers after %d: %w", after, err)
	}
	return crawlers, nil
}

// ListCrawlersMatching is ListCrawlersAfter of the crawlers whose name or
// query holds match (case-insensitive), or whose id it is.
func (s *Store) ListCrawlersMatching(ctx context.Context, after int64, limit int, match string) ([]Crawler, error) {
	like := "%" + strings.NewReplacer(`\`, `\\`, "%", `\%`, "_", `\_`).Replace(strings.ToLower(match)) + "%"
	q := s.db.WithContext(ctx).Where("id > ?", after).
		Where(`LOWER(name) LIKE ? ESCAPE '\' OR LOWER(query) LIKE ? ESCAPE '\' OR CAST(id AS TEXT) = ?`, like, like, match)
	crawlers := []Crawler{}
	if err := q.Order("id").Limit(limit).Find(&crawlers).Error; err != nil {
		return nil, fmt.Errorf("sqlstore: unable to list crawlers matching %q: %w", match, err)
	}
	return crawlers, nil
}

// ListCrawlers reads every crawler, ordered by id.
func (s *Store) ListCrawlers(ctx context.Context) ([]Crawler, error) {
	crawlers := []Crawler{}
	if err := s.db.WithContext(ctx).Order("id").Find(&crawlers).Error; err != nil {
		return nil, fmt.Errorf("sqlstore: unable to list crawlers: %w", err)
	}
	return crawlers, nil
}

// UpdateCrawler changes a crawler in one transaction: it reads the current
// row (locked against concurrent updates), lets fn change it, checks the
// result and saves it with Version increased by one, so spawns see a new
// configuration. fn may change the configuration fields (Source, Query,
// Keywords, QueryUUID, CommentLimit, Enabled, LimitReached, CursorAt); ID,
// UserID, Usage and CreatedAt keep their stored values, because usage only
// ever moves through ApplyIncrements. An error from fn aborts the update and
// is returned as is. fn must not call the Store: on SQLite the transaction
// holds the store's only connection.
func (s *Store) UpdateCrawler(ctx context.Context, id int64, fn func(*Crawler) error) (Crawler, error) {
	var (
		out   Crawler
		fnErr error
	)
	err := s.db.WithContext(ctx).Transaction(func(tx *gorm.DB) error {
		seq, err := nextChangeTx(tx)
		if err != nil {
			return err
		}
		var cur Crawler
		if err := tx.Clauses(clause.Locking{Strength: clause.LockingStrengthUpdate}).Take(&cur, "id = ?", id).Error; err != nil {
			return notFound(err)
		}
		next := cur
		if cur.CursorAt != nil {
			t := *cur.CursorAt
			next.CursorAt = &t
		}
		if err := fn(&next); err != nil {
			fnErr = err
			return err
		}
		next.ID, next.UserID, next.Usage, next.CreatedAt = cur.ID, cur.UserID, cur.Usage, cur.CreatedAt
		next.ChangeSeq = seq
		if err := s.validCrawler(&next); err != nil {
			return err
		}
		if next.CursorAt != nil {
			t := dbTime(*next.CursorAt)
			next.CursorAt = &t
		}
		next.Version = cur.Version + 1
		next.UpdatedAt = now()
		out = next
		return tx.Model(&Crawler{}).Where("id = ?", id).UpdateColumns(map[string]any{
			"source":            next.Source,
			"name":              next.Name,
			"query":             next.Query,
			"keywords":          next.Keywords,
			"query_uuid":        next.QueryUUID,
			"comment_limit":     next.CommentLimit,
			"enabled":           next.Enabled,
			"limit_reached":     next.LimitReached,
			"cursor_at":         next.CursorAt,
			"version":           next.Version,
			"updated_at":        next.UpdatedAt,
			"change_seq":        next.ChangeSeq,
			"retention_seconds": next.RetentionSeconds,
		}).Error
	})
	switch {
	case fnErr != nil:
		return Crawler{}, fnErr
	case errors.Is(err, ErrInvalid):
		return Crawler{}, err
	case err != nil:
		return Crawler{}, fmt.Errorf("sqlstore: unable to update crawler %d: %w", id, err)
	}
	return out, nil
}

// DeleteCrawler removes a crawler. Its usage stays with its user; late
// increments for it still count to the user (see ApplyIncrements). The
// deletion is logged for readers of ChangesSince.
func (s *Store) DeleteCrawler(ctx context.Context, id int64) error {
	err := s.db.WithContext(ctx).Transaction(func(tx *gorm.DB) error {
		seq, err := nextChangeTx(tx)
		if err != nil {
			return err
		}
		res := tx.Where("id = ?", id).Delete(&Crawler{})
		if res.Error != nil {
			return res.Error
		}
		if res.RowsAffected == 0 {
			return ErrNotFound
		}
		return recordDeletionTx(tx, id, seq)
	})
	if err != nil {
		return fmt.Errorf("sqlstore: unable to delete crawler %d: %w", id, err)
	}
	return nil
}

// SetLimitReached marks (or clears) a crawler as stopped at its limit. It is
// bookkeeping, not a configuration change: Version and UpdatedAt stay. It
// does take a change number, so hubs reading changes learn of it.
func (s *Store) SetLimitReached(ctx context.Context, id int64, reached bool) error {
	err := s.db.WithContext(ctx).Transaction(func(tx *gorm.DB) error {
		seq, err := nextChangeTx(tx)
		if err != nil {
			return err
		}
		res := tx.Model(&Crawler{}).Where("id = ?", id).
			UpdateColumns(map[string]any{"limit_reached": reached, "change_seq": seq})
		if res.Error != nil {
			return res.Error
		}
		if res.RowsAffected == 0 {
			return ErrNotFound
		}
		return nil
	})
	if err != nil {
		return fmt.Errorf("sqlstore: unable to mark crawler %d: %w", id, err)
	}
	return nil
}

// validCrawler checks the fields the store relies on: a source kind the
// declarations name (UseSources), and the query's presence; its canonical
// form is pkg/query's business.
func (s *Store) validCrawler(c *Crawler) error {
	switch {
	case !s.knownSource(c.Source):
		return fmt.Errorf("%w: %w", ErrInvalid, s.sourceRegistry().Unknown(c.Source))
	case strings.TrimSpace(c.Query.text()) == "":
		return fmt.Errorf("%w: crawler query is empty", ErrInvalid)
	case c.QueryUUID == "" || len(c.QueryUUID) > 36:
		return fmt.Errorf("%w: crawler query uuid %q is not a uuid", ErrInvalid, c.QueryUUID)
	}
	if err := validRetention(c.RetentionSeconds); err != nil {
		return err
	}
	if err := ValidCrawlerName(c.Name); err != nil {
		return err
	}
	return validLimit(c.CommentLimit)
}

// ValidCrawlerName checks a crawler's name: at most api.MaxCrawlerName
// characters of valid UTF-8, no control characters, no spaces around it
// ("" is no name).
func ValidCrawlerName(name string) error {
	switch {
	case !utf8.ValidString(name):
		return fmt.Errorf("%w: name is not valid UTF-8", ErrInvalid)
	case utf8.RuneCountInString(name) > api.MaxCrawlerName:
		return fmt.Errorf("%w: name must be at most %d characters, got %d", ErrInvalid, api.MaxCrawlerName, utf8.RuneCountInString(name))
	case strings.TrimSpace(name) != name:
		return fmt.Errorf("%w: name must not start or end with spaces", ErrInvalid)
	case strings.IndexFunc(name, unicode.IsControl) >= 0:
		return fmt.Errorf("%w: name must not hold control characters", ErrInvalid)
	}
	return nil
}

// validRetention checks a retention in seconds (0 for none).
func validRetention(seconds int64) error {
	if seconds < 0 || seconds > int64(api.MaxRetention.Seconds()) {
		return fmt.Errorf("%w: retention must be 0 to %d seconds, got %d", ErrInvalid, int64(api.MaxRetention.Seconds()), seconds)
	}
	return nil
}

// crawlerBatch is how many rows CreateCrawlers inserts per statement.
const crawlerBatch = 500

// CreateCrawlers stores many crawlers in one transaction, with the same
// checks as CreateCrawler: all of them are created, or none.
func (s *Store) CreateCrawlers(ctx context.Context, in []Crawler) ([]Crawler, error) {
	rows := make([]Crawler, len(in))
	users := map[int64]bool{}
	var disabled []int
	for i, c := range in {
		rows[i] = Crawler{
			UserID: c.UserID, Name: c.Name, Source: c.Source, Query: c.Query, Keywords: c.Keywords,
			QueryUUID: c.QueryUUID, CommentLimit: c.CommentLimit, Enabled: c.Enabled, Version: 1,
			RetentionSeconds: c.RetentionSeconds,
		}
		if rows[i].UserID <= 0 {
			return nil, fmt.Errorf("%w: crawler %d: user id must be positive, got %d", ErrInvalid, i, c.UserID)
		}
		if err := s.validCrawler(&rows[i]); err != nil {
			return nil, fmt.Errorf("crawler %d: %w", i, err)
		}
		users[c.UserID] = true
		if !c.Enabled {
			disabled = append(disabled, i)
		}
	}
	err := s.db.WithContext(ctx).Transaction(func(tx *gorm.DB) error {
		seq, err := nextChangeTx(tx)
		if err != nil {
			return err
		}
		for i := range rows {
			rows[i].ChangeSeq = seq
		}
		for id := range users {
			var n int64
			if err := tx.Model(&User{}).Where("id = ?", id).Count(&n).Error; err != nil {
				return err
			}
			if n == 0 {
				return fmt.Errorf("%w: user %d does not exist", ErrInvalid, id)
			}
		}
		if err := tx.CreateInBatches(&rows, crawlerBatch).Error; err != nil {
			return err
		}
		for _, i := range disabled {
			rows[i].Enabled = false
			if err := tx.Model(&Crawler{}).Where("id = ?", rows[i].ID).UpdateColumn("enabled", false).Error; err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		if errors.Is(err, ErrInvalid) {
			return nil, err
		}
		return nil, fmt.Errorf("sqlstore: unable to create crawlers: %w", err)
	}
	return rows, nil
}
