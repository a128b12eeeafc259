package sqlstore

import (
	"context"
	"fmt"
)

// UserCrawlerIDs lists the ids of a user's crawlers, in order. A user
// without crawlers has none; an unknown user is ErrNotFound.
func (s *Store) UserCrawlerIDs(ctx context.Context, userID int64) ([]int64, error) {
	if _, err := s.GetUser(ctx, userID); err != nil {
		return nil, err
	}
	ids := []int64{}
	if err := s.db.WithContext(ctx).Model(&Crawler{}).Where("user_id = ?", userID).Order("id").Pluck("id", &ids).Error; err != nil {
		return nil, fmt.Errorf("sqlstore: unable to list the crawlers of user %d: %w", userID, err)
	}
	return ids, nil
}
