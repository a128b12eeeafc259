package server

import (
	"bytes"
	"crypto/sha256"
	"embed"
	"encoding/hex"
	"fmt"
	"io/fs"
	"net/http"
	"path"
	"time"

	"github.com/blackwidow-crawl/blackwidow/pkg/httpx"
)

// webFiles is the dashboard: a static page that reads the admin API from the
// browser with the operator's admin token. The page itself holds no data,
// so it needs no token.
//
//go:embed web
var webFiles embed.FS

// dashboardIndex is the page served at GET /; the other files are assets.
const dashboardIndex = "index.html"

// contentSecurityPolicy lets the page load only its own scripts, styles and
// images and talk only to the hub: comment text comes from crawled sources,
// and even a slip in the page's escaping must not run anything.
const contentSecurityPolicy = "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' data:; " +
	"connect-src 'self'; base-uri 'none'; form-action 'none'; frame-ancestors 'none'"

// assetTypes are the content types of the files the dashboard serves; a file
// of any other type is not served.
var assetTypes = map[string]string{
	".html": "text/html; charset=utf-8",
	".js":   "text/javascript; charset=utf-8",
	".css":  "text/css; charset=utf-8",
	".svg":  "image/svg+xml",
}

// asset is one embedded file, ready to serve.
type asset struct {
	body        []byte
	contentType string
	etag        string
}

// dashboardAssets holds every embedded file by name, read once.
var dashboardAssets = mustLoadAssets()

func mustLoadAssets() map[string]asset {
	root, err := fs.Sub(webFiles, "web")
	if err != nil {
		panic(fmt.Sprintf("server: dashboard files: %v", err))
	}
	out := map[string]asset{}
	err = fs.WalkDir(root, ".", func(name string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		typ, ok := assetTypes[path.Ext(name)]
		if !ok {
			return nil
		}
		b, err := fs.ReadFile(root, name)
		if err != nil {
			return err
		}
		sum := sha256.Sum256(b)
		out[name] = asset{body: b, contentType: typ, etag: `"` + hex.EncodeToString(sum[:8]) + `"`}
		return nil
	})
	if err != nil {
		panic(fmt.Sprintf("server: dashboard files: %v", err))
	}
	if _, ok := out[dashboardIndex]; !ok {
		panic("server: dashboard files: no " + dashboardIndex)
	}
	return out
}

func (s *Server) handleDashboard(w http.ResponseWriter, r *http.Request) {
	serveAsset(w, r, dashboardIndex, dashboardAssets[dashboardIndex])
}

func (s *Server) handleAsset(w http.ResponseWriter, r *http.Request) {
	name := r.PathValue("file")
	a, ok := dashboardAssets[name]
	if !ok || name == dashboardIndex {
		httpx.WriteError(w, http.StatusNotFound, "no dashboard asset %q", name)
		return
	}
	serveAsset(w, r, name, a)
}

// serveAsset answers with an embedded file. Browsers revalidate it on every
// load (the ETag makes that a 304), so a new hub binary shows its new page at
// once.
func serveAsset(w http.ResponseWriter, r *http.Request, name string, a asset) {
	h := w.Header()
	h.Set("Content-Type", a.contentType)
	h.Set("Content-Security-Policy", contentSecurityPolicy)
	h.Set("X-Content-Type-Options", "nosniff")
	h.Set("Referrer-Policy", "no-referrer")
	h.Set("X-Frame-Options", "DENY")
	h.Set("Cache-Control", "no-cache")
	h.Set("ETag", a.etag)
	http.ServeContent(w, r, name, time.Time{}, bytes.NewReader(a.body))
}
