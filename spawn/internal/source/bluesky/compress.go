package bluesky

import (
	_ "embed"
	"fmt"

	"github.com/klauspost/compress/zstd"
)

// zstdDictionary is Jetstream v1's zstd dictionary (ID 1612007021): with
// compress=true the service sends every event as a binary frame compressed
// with it. From bluesky-social/jetstream,
// internal/subscribe/dictionaries/legacy_subscribe.zdict, MIT or
// Apache-2.0 (testdata/SOURCES.md).
//
//go:embed zstd_dictionary
var zstdDictionary []byte

// newDecoder returns a decoder of compressed events that refuses to
// produce more than limit bytes from one.
func newDecoder(limit int64) (*zstd.Decoder, error) {
	d, err := zstd.NewReader(nil, zstd.WithDecoderDicts(zstdDictionary), zstd.WithDecoderConcurrency(1),
		zstd.WithDecoderMaxMemory(uint64(limit)))
	if err != nil {
		return nil, fmt.Errorf("bluesky: unable to load the zstd dictionary: %w", err)
	}
	return d, nil
}
