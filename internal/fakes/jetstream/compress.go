package jetstream

import (
	_ "embed"
	"sync"

	"github.com/klauspost/compress/zstd"
)

// zstdDictionary is Jetstream v1's zstd dictionary (ID 1612007021), the
// bytes bluesky-social/jetstream serves compressed frames with
// (internal/subscribe/dictionaries/legacy_subscribe.zdict, MIT or
// Apache-2.0; see spawn/internal/source/bluesky/testdata/SOURCES.md).
//
//go:embed zstd_dictionary
var zstdDictionary []byte

// Dictionary returns the dictionary compressed frames need, for a client.
func Dictionary() []byte { return zstdDictionary }

// encoders compress frames as the real server does: one zstd frame per
// event, with the dictionary, a 128 KiB window, one goroutine each.
var encoders = sync.Pool{New: func() any {
	enc, err := zstd.NewWriter(nil, zstd.WithEncoderDict(zstdDictionary),
		zstd.WithWindowSize(1<<17), zstd.WithEncoderConcurrency(1))
	if err != nil {
		panic("jetstream: the embedded zstd dictionary does not load: " + err.Error())
	}
	return enc
}}

// compressFrame is one event's JSON as a compressed frame.
func compressFrame(data []byte) []byte {
	enc := encoders.Get().(*zstd.Encoder)
	defer encoders.Put(enc)
	return enc.EncodeAll(data, make([]byte, 0, len(data)/2))
}
