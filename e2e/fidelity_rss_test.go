package e2e

import (
	"os"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/blackwidow-crawl/blackwidow/e2e/clustertest"
	"github.com/blackwidow-crawl/blackwidow/internal/fakes/feedserver"
	"github.com/blackwidow-crawl/blackwidow/internal/testkit"
)

// headerOnlyLatin1Feed is a real ISO-8859-1 feed (Le Cercle Psy, recorded
// in miniflux's test data) without an XML declaration: only the
// Content-Type header can name its character set.
const headerOnlyLatin1Feed = "../spawn/internal/source/rss/testdata/corpus/miniflux-no_encoding_ISO-8859-1.xml"

// TestRSS_CharsetInTheHeaderOnlyStoredAsCleanText serves that feed as its
// publisher did, with "charset=ISO-8859-1" in the header only, to a
// cluster: a crawler reading every item and one filtering on an accented
// word. Every item reaches the store and the hub's API as clean text (no
// U+FFFD, no mojibake), and the filter matches the accented word.
func TestRSS_CharsetInTheHeaderOnlyStoredAsCleanText(t *testing.T) {
	body, err := os.ReadFile(headerOnlyLatin1Feed)
	if err != nil {
		t.Fatal(err)
	}
	c := newCluster(t, clusterOpts{spawns: 1})
	path := c.Feeds.Record("cercle-psy.xml", feedserver.Recorded{Body: body, ContentType: "text/xml; charset=ISO-8859-1"})
	u := c.user(0)
	all := c.rssCrawler(u.ID, []string{c.FeedBase + path}, nil, 0)
	accented := c.rssCrawler(u.ID, []string{c.FeedBase + path}, []string{"thérapeutique"}, 0)

	// The feed lists 10 items (one of them empty).
	testkit.WaitFor(t, clustertest.WaitTimeout, "the feed's 10 items stored", func() bool {
		return len(c.storedComments(all.ID)) == 10 && len(c.storedComments(accented.ID)) == 1
	})
	// Read off the feed by eye (its bytes are ISO-8859-1: 0xe9 is é).
	want := map[string]string{
		"https://le-cercle-psy.scienceshumaines.com/perturbateurs-endocriniens-quels-effets-sur-le-cerveau_sh_39995": "Perturbateurs endocriniens : quels effets sur le cerveau ?\nSi leur impact semble discret au premier abord, nombre d'études montrent que les perturbateurs endocriniens pourraient être à l'origine de troubles neuro-développementaux chez l'enfant.",
		"https://le-cercle-psy.scienceshumaines.com/migrants-l-urgence-therapeutique_sh_39180":                       "Migrants : l'urgence thérapeutique\nPoussés à l'exil par les conflits, la pauvreté et l'espoir d'une vie meilleure, les migrants arrivent après un long parcours. Beaucoup sont blessés, brisés, désespérés parfois. Quelle réponse pour les aider ?",
	}
	found := 0
	for _, cm := range c.storedComments(all.ID) {
		if !utf8.ValidString(cm.Text) || strings.ContainsRune(cm.Text, utf8.RuneError) || strings.Contains(cm.Text, "Ã") {
			t.Errorf("comment %s stored as %q", cm.ID, cm.Text)
		}
		if w, ok := want[cm.URL]; ok {
			found++
			if cm.Text != w {
				t.Errorf("comment %s: text %q, want %q", cm.URL, cm.Text, w)
			}
		}
	}
	if found != len(want) {
		t.Fatalf("found %d of the %d items checked", found, len(want))
	}
	if got := c.storedComments(accented.ID)[0]; got.URL != "https://le-cercle-psy.scienceshumaines.com/migrants-l-urgence-therapeutique_sh_39180" {
		t.Fatalf("the filter on thérapeutique stored %s", got.URL)
	}

	// The hub's API shows what the store holds.
	recent, err := c.Client.RecentComments(c.Ctx, accented.ID, 5)
	if err != nil {
		t.Fatal(err)
	}
	if len(recent) != 1 || recent[0].Text != want[recent[0].URL] {
		t.Fatalf("the hub shows %+v", recent)
	}
}
