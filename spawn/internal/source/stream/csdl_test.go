package stream

import (
	"errors"
	"slices"
	"strings"
	"testing"

	"github.com/blackwidow-crawl/blackwidow/internal/fakes/streamserver"
	"github.com/blackwidow-crawl/blackwidow/pkg/query"
	"github.com/blackwidow-crawl/blackwidow/spawn/internal/spawntest"
)

func mustParse(t testing.TB, s string) *query.Query {
	t.Helper()
	q, err := query.Parse(s)
	if err != nil {
		t.Fatalf("Parse(%q): %v", s, err)
	}
	return q
}

func TestCompileCSDL(t *testing.T) {
	tests := []struct {
		in, want string
	}{
		{"golang", `interaction.content contains "golang"`},
		{"rust OR golang", `interaction.content contains "golang" or interaction.content contains "rust"`},
		{`go "new york" -nyc`, `interaction.content contains "new york"`},
		{`#go OR @alice`, `interaction.content contains "#go" or interaction.content contains "@alice"`},
		{`back\slash`, `interaction.content contains "back\\slash"`},
		// The subset has no proximity: a NEAR is the AND of its
		// operands; nor wildcards: a prefix is no term.
		{"logitech NEAR/2f keyboard", `interaction.content contains "keyboard"`},
		{"(apple OR orange) NEAR/3 smartphone", `interaction.content contains "smartphone"`},
		{"kube* NEAR/1 deploy", `interaction.content contains "deploy"`},
	}
	for _, tc := range tests {
		t.Run(tc.in, func(t *testing.T) {
			got, err := compileCSDL(mustParse(t, tc.in))
			if err != nil {
				t.Fatal(err)
			}
			if got != tc.want {
				t.Fatalf("got %s, want %s", got, tc.want)
			}
			// The local stream server accepts it.
			if _, err := streamserver.ParseCSDL(got); err != nil {
				t.Fatalf("stream server refuses %s: %v", got, err)
			}
		})
	}
	for _, in := range []string{"from:alice OR go", "kube* OR go"} {
		if _, err := compileCSDL(mustParse(t, in)); !errors.Is(err, query.ErrUnsupported) {
			t.Fatalf("%s: got %v, want query.ErrUnsupported", in, err)
		}
	}
}

// TestCompileCSDL_Covers checks that every text a query matches contains
// one of its CSDL phrases, as the local stream server reads them.
func TestCompileCSDL_Covers(t *testing.T) {
	spawntest.CheckCover(t, func(q *query.Query) (func(lower string) bool, error) {
		def, err := compileCSDL(q)
		if err != nil {
			return nil, err
		}
		phrases, err := streamserver.ParseCSDL(def)
		if err != nil {
			t.Fatalf("stream server refuses %s: %v", def, err)
		}
		return func(lower string) bool {
			return slices.ContainsFunc(phrases, func(p []string) bool { return query.ContainsWord(lower, strings.Join(p, " ")) })
		}, nil
	})
}
