package blackwidow_test

// The module's import rule: the product (hub, spawn, bwctl, and what they
// share) never imports a test double or a test helper. Test doubles live
// under internal/fakes, test helpers under internal/testkit (and the
// spawn's under spawn/internal/spawntest), end-to-end
// tests under e2e, and only they and _test.go files may import them or any
// package named *test (net/http/httptest, the fakes' natstest, ...).

import (
	"bufio"
	"go/build"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"strings"
	"testing"
)

// testTrees are the folders that hold test code: what is under them may
// import test code, and the product may not import it. The spawn's own
// test kit (a real node for the sources' tests) lives under spawn/internal,
// where Go lets it import the node.
var testTrees = []string{"internal/fakes", "internal/testkit", "e2e", "spawn/internal/spawntest"}

// TestImports_ProductImportsNoTestCode reads the imports of every package
// of the module (build constraints applied, _test.go files left out) and
// fails for each product package that imports a package under a test tree
// or one named *test.
func TestImports_ProductImportsNoTestCode(t *testing.T) {
	module := modulePath(t)
	pkgs := 0
	err := filepath.WalkDir(".", func(dir string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if !d.IsDir() {
			return nil
		}
		if name := d.Name(); dir != "." && (name == "testdata" || name == "vendor" || strings.HasPrefix(name, ".") || strings.HasPrefix(name, "_")) {
			return filepath.SkipDir
		}
		rel := filepath.ToSlash(dir)
		if testTreeOf(rel) != "" {
			return nil
		}
		pkg, err := build.ImportDir(dir, build.ImportComment)
		if err != nil {
			if _, none := err.(*build.NoGoError); none {
				return nil
			}
			t.Errorf("%s: %v", rel, err)
			return nil
		}
		pkgs++
		for _, imp := range pkg.Imports {
			if why := testImport(module, imp); why != "" {
				t.Errorf("%s imports %s, %s: the product may not import test code", rel, imp, why)
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if pkgs < 20 {
		t.Fatalf("read only %d product packages: is the test run from the module root?", pkgs)
	}
}

// TestImports_RuleCatchesTestCode checks the rule itself on import paths.
func TestImports_RuleCatchesTestCode(t *testing.T) {
	const module = "example.com/m"
	for _, tc := range []struct {
		imp  string
		test bool
	}{
		{"example.com/m/internal/fakes/feedserver", true},
		{"example.com/m/internal/testkit", true},
		{"example.com/m/e2e/clustertest", true},
		{"example.com/m/e2e", true},
		{"example.com/m/spawn/internal/spawntest", true},
		{"net/http/httptest", true},
		{"example.com/m/internal/fakesx", false},
		{"example.com/m/spawn/internal/node", false},
		{"example.com/m/pkg/termq", false},
		{"net/http", false},
		{"testing", false},
	} {
		if got := testImport(module, tc.imp) != ""; got != tc.test {
			t.Errorf("testImport(%q) = %v, want %v", tc.imp, got, tc.test)
		}
	}
}

// testImport says why imp is test code ("" when it is not): a package of
// the module under a test tree, or any package named *test.
func testImport(module, imp string) string {
	if rel, ok := strings.CutPrefix(imp, module+"/"); ok {
		if tree := testTreeOf(rel); tree != "" {
			return "a package under " + tree
		}
	}
	if strings.HasSuffix(path.Base(imp), "test") {
		return "a package named *test"
	}
	return ""
}

// testTreeOf is the test tree a module-relative path lies under, "" for
// none.
func testTreeOf(rel string) string {
	for _, tree := range testTrees {
		if rel == tree || strings.HasPrefix(rel, tree+"/") {
			return tree
		}
	}
	return ""
}

// modulePath reads the module path from go.mod.
func modulePath(t *testing.T) string {
	t.Helper()
	f, err := os.Open("go.mod")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if m, ok := strings.CutPrefix(strings.TrimSpace(sc.Text()), "module "); ok {
			return strings.Trim(strings.TrimSpace(m), `"`)
		}
	}
	t.Fatal("go.mod names no module")
	return ""
}
