package cassandra

import (
	"testing"

	"github.com/blackwidow-crawl/blackwidow/spawn/internal/store/storetest"
)

func TestSearch(t *testing.T) {
	s, _ := openTest(t)
	storetest.CheckSearch(t, s)
}

func TestSearch_IndexAnswersAsTheScan(t *testing.T) {
	s, _ := openTest(t)
	storetest.CheckQuerySearch(t, s)
}
