package mastodon

import (
	"bytes"
	"os"
	"path/filepath"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/blackwidow-crawl/blackwidow/api"
	fake "github.com/blackwidow-crawl/blackwidow/internal/fakes/mastodon"
	"github.com/blackwidow-crawl/blackwidow/internal/testkit"
)

// retractions records what a source tells.
type retractions struct {
	mu  sync.Mutex
	got []api.Retraction
}

func (r *retractions) add(xs []api.Retraction) {
	r.mu.Lock()
	r.got = append(r.got, xs...)
	r.mu.Unlock()
}

func (r *retractions) all() []api.Retraction {
	r.mu.Lock()
	defer r.mu.Unlock()
	return slices.Clone(r.got)
}

// ops lists "op id" of what was told, in order.
func (r *retractions) ops() []string {
	var out []string
	for _, x := range r.all() {
		out = append(out, x.Op+" "+x.ID)
	}
	return out
}

// TestSource_EditsAndDeletesAreToldByTheStatusURI edits and deletes a
// status the source read, deletes one it never read, and checks what the
// source tells: the edit with its text, links and edited_at, and the
// delete mapped from the local id to the status's URI (the comment id);
// the unmapped delete is counted, not told.
func TestSource_EditsAndDeletesAreToldByTheStatusURI(t *testing.T) {
	srv := startServer(t, fake.Options{})
	ds, rec := start(t, testOptions(t, srv.URL()), spec(1, "#golang"))
	var told retractions
	ds.Retractions(told.add)
	subscribed(t, srv, "hashtag:golang")
	st := srv.Post(fake.Status{Content: "<p>#golang is fun</p>", Tags: []string{"golang"}})
	testkit.WaitFor(t, waitDeadline, "the status", func() bool { return rec.Has(st.URI) })
	st.Content = `<p>#golang is fun, see <a href="https://go.dev/blog/">go.dev/blog</a></p>`
	edited := srv.Edit(st)
	srv.Delete(st)
	never := srv.Remember(fake.Status{Content: "<p>#golang unseen</p>", Tags: []string{"golang"}})
	srv.Delete(never)
	testkit.WaitFor(t, waitDeadline, "the edit and the delete", func() bool { return len(told.all()) == 2 })
	testkit.WaitFor(t, waitDeadline, "the unmapped delete counted", func() bool { return ds.Stats().Unmapped == 1 })
	got := told.all()
	edit, del := got[0], got[1]
	if edit.Op != api.RetractUpdate || edit.Source != api.SourceMastodon || edit.ID != st.URI ||
		edit.Text != "#golang is fun, see go.dev/blog" || !slices.Equal(edit.Links, []string{"https://go.dev/blog/"}) ||
		!edit.EditedAt.Equal(edited.EditedAt.UTC().Truncate(time.Millisecond)) {
		t.Errorf("edit told %+v (edited at %s)", edit, edited.EditedAt)
	}
	if del.Op != api.RetractDelete || del.ID != st.URI || del.Source != api.SourceMastodon {
		t.Errorf("delete told %+v", del)
	}
	if n := rec.Count(st.URI); n != 1 {
		t.Errorf("the status was handed over %d times, want once (its edit is a retraction)", n)
	}
}

// TestDecodeFrame_RecordedDeleteAndEdit decodes the guide's delete event
// (its payload the deleted status's local id, a string) and its
// status.update (the edited Status, edited_at set); the expected values are
// read off testdata/stream_events.jsonl.
func TestDecodeFrame_RecordedDeleteAndEdit(t *testing.T) {
	lines := readJSONL(t, "stream_events.jsonl")
	del, err := decodeFrame(lines[0])
	if err != nil {
		t.Fatal(err)
	}
	if del.kind != frameOther || del.event != eventDelete || del.stream != streamPublic || del.deleted != "106692867363994015" {
		t.Errorf("delete decoded as %+v", del)
	}
	upd, err := decodeFrame(lines[1])
	if err != nil {
		t.Fatal(err)
	}
	if upd.kind != frameStatus || upd.event != eventEdit || upd.status.ID != "109348677773283527" ||
		upd.status.URI != "http://mastodon.local/users/admin/statuses/109348677773283527" ||
		upd.status.EditedAt == nil || *upd.status.EditedAt != "2022-11-15T16:07:29.023Z" {
		t.Errorf("status.update decoded as %+v", upd)
	}
	for _, bad := range []string{`{"event":"delete"}`, `{"event":"delete","payload":"../x"}`, `{"event":"delete","payload":{"id":"1"}}`} {
		f, err := decodeFrame([]byte(bad))
		if err != nil || f.deleted != "" {
			t.Errorf("%s: deleted %q, %v; want none, no error", bad, f.deleted, err)
		}
	}
}

// readJSONL reads the lines of a testdata file.
func readJSONL(t *testing.T, name string) [][]byte {
	t.Helper()
	data, err := os.ReadFile(filepath.Join("testdata", name))
	if err != nil {
		t.Fatal(err)
	}
	return bytes.Split(bytes.TrimSpace(data), []byte("\n"))
}
