package spike

import (
	"bufio"
	"encoding/csv"
	"errors"
	"fmt"
	"io"
	"strconv"
	"strings"
	"time"
)

// Limits of ReadCSV.
const (
	// MaxCSVRows bounds the rows of one series: a year of minutes.
	MaxCSVRows = 600_000
	// maxCSVLine bounds one line.
	maxCSVLine = 4096
)

// csvTimeLayouts are the timestamp forms ReadCSV accepts; times without a
// zone are UTC.
var csvTimeLayouts = []string{time.RFC3339Nano, "2006-01-02 15:04:05", "2006-01-02 15:04:05.999999999"}

// ReadCSV reads a series as "timestamp,value" rows under a header row:
// timestamps in RFC 3339 or "YYYY-MM-DD HH:MM:SS" (UTC), one row a step,
// in time order. Real series repeat a time or step back now and then (a
// clock set back): such rows are kept as read, and the detector skips a
// step that is not after the one before. Errors name the line.
func ReadCSV(r io.Reader) ([]Point, error) {
	cr := csv.NewReader(bufio.NewReaderSize(io.LimitReader(r, int64(MaxCSVRows+1)*maxCSVLine), 64<<10))
	cr.FieldsPerRecord = -1
	cr.ReuseRecord = true
	header, err := cr.Read()
	if errors.Is(err, io.EOF) {
		return nil, fmt.Errorf("%w: the CSV is empty: want a header row timestamp,value", ErrInvalid)
	}
	if err != nil {
		return nil, fmt.Errorf("%w: line 1: %v", ErrInvalid, err)
	}
	if len(header) < 2 {
		return nil, fmt.Errorf("%w: line 1: want a header row timestamp,value, got %q", ErrInvalid, strings.Join(header, ","))
	}
	if _, err := parseCSVTime(header[0]); err == nil {
		return nil, fmt.Errorf("%w: line 1 is data, want a header row timestamp,value first", ErrInvalid)
	}
	var out []Point
	for line := 2; ; line++ {
		rec, err := cr.Read()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return nil, fmt.Errorf("%w: line %d: %v", ErrInvalid, line, err)
		}
		if len(rec) == 1 && strings.TrimSpace(rec[0]) == "" {
			continue
		}
		if len(rec) != 2 {
			return nil, fmt.Errorf("%w: line %d: want timestamp,value, got %d fields", ErrInvalid, line, len(rec))
		}
		at, err := parseCSVTime(rec[0])
		if err != nil {
			return nil, fmt.Errorf("%w: line %d: %v", ErrInvalid, line, err)
		}
		v, err := strconv.ParseFloat(strings.TrimSpace(rec[1]), 64)
		if err != nil || v != v || v > 1e300 || v < -1e300 {
			return nil, fmt.Errorf("%w: line %d: value %q is not a number", ErrInvalid, line, rec[1])
		}
		if len(out) >= MaxCSVRows {
			return nil, fmt.Errorf("%w: more than %d rows", ErrInvalid, MaxCSVRows)
		}
		out = append(out, Point{At: at, Value: v})
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("%w: the CSV has a header but no rows", ErrInvalid)
	}
	return out, nil
}

func parseCSVTime(s string) (time.Time, error) {
	s = strings.TrimSpace(s)
	for _, layout := range csvTimeLayouts {
		if t, err := time.Parse(layout, s); err == nil {
			return t.UTC(), nil
		}
	}
	return time.Time{}, fmt.Errorf("timestamp %q is neither RFC 3339 nor YYYY-MM-DD HH:MM:SS", s)
}
