package bluesky

import (
	"testing"
	"time"

	"github.com/blackwidow-crawl/blackwidow/internal/fakes/jetstream"
	"github.com/blackwidow-crawl/blackwidow/internal/testkit"
)

// TestSource_CompressedStreamCarriesTheSamePostsForLessBandwidth reads the
// recorded corpus twice from the local Jetstream, which compresses as the
// real service does: once plain, once with compress=true. Both hand over
// the same posts; the compressed one receives fewer bytes.
func TestSource_CompressedStreamCarriesTheSamePostsForLessBandwidth(t *testing.T) {
	js := jetstream.Start(t, jetstream.Options{ReplayWindow: 100 * 365 * 24 * time.Hour})
	plainOpts := testOptions(t, js.URL())
	zOpts := testOptions(t, js.URL())
	zOpts.Compress = true
	plain, plainRec := start(t, plainOpts, spec(1, "the"))
	packed, packedRec := start(t, zOpts, spec(1, "the"))
	testkit.WaitFor(t, waitTimeout, "both connections", func() bool { return js.Conns() == 2 })
	if a := js.Accepted(); a[0].Compress == a[1].Compress {
		t.Fatalf("connections %+v: want one compressed, one not", a)
	}
	events := 0
	for _, name := range corpus {
		lines := readLines(t, name)
		events += len(lines)
		if err := js.Replay(lines); err != nil {
			t.Fatal(err)
		}
	}
	read := func(s *Source) bool { return s.Stats().Malformed+s.Stats().Truncated == 0 && s.Stats().WireBytes > 0 }
	testkit.WaitFor(t, waitTimeout, "the corpus read twice", func() bool {
		return read(plain) && read(packed) && len(plainRec.All()) > 0 && len(plainRec.All()) == len(packedRec.All()) &&
			plain.Stats().Position == packed.Stats().Position && plain.Stats().Position == 1783175888390226
	})
	for i, it := range plainRec.All() {
		if got := packedRec.All()[i]; got.ID != it.ID || got.Text != it.Text {
			t.Errorf("post %d: compressed %q %q, plain %q %q", i, got.ID, got.Text, it.ID, it.Text)
		}
	}
	p, z := plain.Stats().WireBytes, packed.Stats().WireBytes
	ratio := float64(z) / float64(p)
	t.Logf("%d recorded events: %d bytes plain, %d compressed with the dictionary: ratio %.3f", events, p, z, ratio)
	if ratio >= 0.6 {
		t.Errorf("compressed/plain = %.3f, want well under 1", ratio)
	}
	if packed.Stats().Malformed != 0 {
		t.Errorf("%d compressed events not read", packed.Stats().Malformed)
	}
}

func TestSource_UncompressibleFrameIsSkipped(t *testing.T) {
	js := jetstream.Start(t, jetstream.Options{})
	opts := testOptions(t, js.URL())
	opts.Compress = true
	src, rec := start(t, opts, spec(1, "hello"))
	testkit.WaitFor(t, waitTimeout, "the connection", func() bool { return js.Conns() == 1 })
	js.SendRaw([]byte(`{"did":"did:plc:a","time_us":1,"kind":"commit"}`)) // not zstd
	p := js.Publish(jetstream.Post{DID: "did:plc:a", Text: "hello after"})
	testkit.WaitFor(t, waitTimeout, "the post after the bad frame", func() bool { return rec.Has(p.URI) })
	if st := src.Stats(); st.Malformed != 1 {
		t.Errorf("stats %+v, want the bad frame counted as malformed", st)
	}
}
