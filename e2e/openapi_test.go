package e2e

// The OpenAPI document api/openapi.yaml is checked four ways here: it loads
// and validates; it lists exactly the routes the hub and the spawn register
// (read from their routes.go with go/parser); its schemas name the fields
// of the Go wire types; and real traffic of a running hub and spawns — admin
// calls, the node API in both directions, error answers — validates against
// it request by request, answer by answer.

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"io"
	"maps"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"os"
	"path/filepath"
	"reflect"
	"regexp"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/getkin/kin-openapi/openapi3"
	"github.com/getkin/kin-openapi/openapi3filter"
	"github.com/getkin/kin-openapi/routers"
	"github.com/getkin/kin-openapi/routers/gorillamux"

	"github.com/blackwidow-crawl/blackwidow/api"
	"github.com/blackwidow-crawl/blackwidow/e2e/clustertest"
	"github.com/blackwidow-crawl/blackwidow/internal/fakes/feedserver"
	"github.com/blackwidow-crawl/blackwidow/internal/fakes/xv2"
	"github.com/blackwidow-crawl/blackwidow/internal/testkit"
	spawnapp "github.com/blackwidow-crawl/blackwidow/spawn/app"
)

// Where the document and the route lists live, relative to this package.
const (
	openAPIFile     = "../api/openapi.yaml"
	hubRoutesFile   = "../hub/internal/server/routes.go"
	spawnRoutesFile = "../spawn/internal/server/routes.go"
	apiPackageDir   = "../api"
)

// Server URLs of the document: a path whose servers list names only one of
// them is served by that server alone.
const (
	hubServerURL   = "http://{hub}"
	spawnServerURL = "http://{spawn}"
)

var defineFormatsOnce sync.Once

// loadOpenAPI loads and validates the document.
func loadOpenAPI(t *testing.T) *openapi3.T {
	t.Helper()
	defineFormatsOnce.Do(func() {
		openapi3.DefineStringFormatValidator("uuid", openapi3.NewRegexpFormatValidator(openapi3.FormatOfStringForUUIDOfRFC4122))
		// The dashboard's files and the comment exports are validated as
		// text, like text/plain.
		for _, ct := range []string{"text/html", "text/css", "text/javascript", "image/svg+xml", "application/x-ndjson"} {
			openapi3filter.RegisterBodyDecoder(ct, openapi3filter.PlainBodyDecoder)
		}
	})
	loader := openapi3.NewLoader()
	doc, err := loader.LoadFromFile(openAPIFile)
	if err != nil {
		t.Fatalf("load %s: %v", openAPIFile, err)
	}
	if err := doc.Validate(context.Background()); err != nil {
		t.Fatalf("%s does not validate: %v", openAPIFile, err)
	}
	return doc
}

func TestOpenAPI_DocumentIsValid(t *testing.T) {
	doc := loadOpenAPI(t)
	ids := map[string]string{}
	for path, item := range doc.Paths.Map() {
		for method, op := range item.Operations() {
			where := method + " " + path
			if op.OperationID == "" {
				t.Errorf("%s has no operationId", where)
			} else if other, dup := ids[op.OperationID]; dup {
				t.Errorf("%s and %s share operationId %q", where, other, op.OperationID)
			}
			ids[op.OperationID] = where
			if op.Security == nil {
				t.Errorf("%s does not say which token it needs (security: [] for an open route)", where)
			}
			if len(op.Tags) == 0 {
				t.Errorf("%s has no tag", where)
			}
			secured := op.Security != nil && len(*op.Security) > 0
			if secured && op.Responses.Status(http.StatusUnauthorized) == nil {
				t.Errorf("%s needs a token but documents no 401", where)
			}
			for code, resp := range op.Responses.Map() {
				if code == "" || code[0] < '4' || resp.Value == nil || path == "/metrics" {
					continue // the Prometheus handler answers its own errors in text
				}
				mt := resp.Value.Content.Get("application/json")
				if mt == nil || mt.Schema == nil || mt.Schema.Ref != "#/components/schemas/Error" {
					t.Errorf("%s %s: error answers must be an Error object", where, code)
				}
			}
		}
	}
}

// ---------------------------------------------------------------- routes

// apiRoute is one method and path, with path parameters written "{}".
type apiRoute struct{ method, path string }

func (r apiRoute) String() string { return r.method + " " + r.path }

var docPathParam = regexp.MustCompile(`\{[^}]*\}`)

// normalRoute turns a net/http ServeMux pattern or a document path into a
// comparable route: parameters become "{}", "{$}" (exact root) is dropped
// and a subtree pattern ("/assets/") stands for one parameter segment.
func normalRoute(method, path string) apiRoute {
	path = strings.ReplaceAll(path, "{$}", "")
	if len(path) > 1 && strings.HasSuffix(path, "/") {
		path += "{}"
	}
	return apiRoute{method, docPathParam.ReplaceAllString(path, "{}")}
}

// stringConsts collects the string constants declared in the Go files of dir.
func stringConsts(t *testing.T, dir string) map[string]string {
	t.Helper()
	fset := token.NewFileSet()
	files, err := filepath.Glob(filepath.Join(dir, "*.go"))
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]string{}
	var pending []*ast.ValueSpec
	for _, name := range files {
		if strings.HasSuffix(name, "_test.go") {
			continue
		}
		f, err := parser.ParseFile(fset, name, nil, 0)
		if err != nil {
			t.Fatal(err)
		}
		for _, d := range f.Decls {
			gd, ok := d.(*ast.GenDecl)
			if !ok || gd.Tok != token.CONST {
				continue
			}
			for _, s := range gd.Specs {
				pending = append(pending, s.(*ast.ValueSpec))
			}
		}
	}
	// Constants may refer to each other: resolve until nothing changes.
	for changed := true; changed; {
		changed = false
		for _, vs := range pending {
			for i, n := range vs.Names {
				if _, done := out[n.Name]; done || i >= len(vs.Values) {
					continue
				}
				if s, ok := evalConstString(vs.Values[i], out, nil); ok {
					out[n.Name] = s
					changed = true
				}
			}
		}
	}
	return out
}

// routeMethods are the net/http method constants a pattern may use.
var routeMethods = map[string]string{
	"MethodGet": http.MethodGet, "MethodHead": http.MethodHead, "MethodPost": http.MethodPost,
	"MethodPut": http.MethodPut, "MethodPatch": http.MethodPatch, "MethodDelete": http.MethodDelete,
	"MethodOptions": http.MethodOptions,
}

// evalConstString evaluates a constant string expression: literals, "+",
// parentheses, local constants and api.X / http.MethodX selectors.
func evalConstString(e ast.Expr, local, apiConsts map[string]string) (string, bool) {
	switch e := e.(type) {
	case *ast.BasicLit:
		if e.Kind != token.STRING {
			return "", false
		}
		s, err := strconv.Unquote(e.Value)
		return s, err == nil
	case *ast.ParenExpr:
		return evalConstString(e.X, local, apiConsts)
	case *ast.BinaryExpr:
		if e.Op != token.ADD {
			return "", false
		}
		a, ok1 := evalConstString(e.X, local, apiConsts)
		b, ok2 := evalConstString(e.Y, local, apiConsts)
		return a + b, ok1 && ok2
	case *ast.Ident:
		s, ok := local[e.Name]
		return s, ok
	case *ast.SelectorExpr:
		pkg, ok := e.X.(*ast.Ident)
		if !ok {
			return "", false
		}
		switch pkg.Name {
		case "api":
			s, ok := apiConsts[e.Sel.Name]
			return s, ok
		case "http":
			s, ok := routeMethods[e.Sel.Name]
			return s, ok
		}
	}
	return "", false
}

// registeredRoutes reads every mux.Handle / mux.HandleFunc pattern of a
// routes.go file.
func registeredRoutes(t *testing.T, file string, apiConsts map[string]string) []apiRoute {
	t.Helper()
	fset := token.NewFileSet()
	f, err := parser.ParseFile(fset, file, nil, 0)
	if err != nil {
		t.Fatal(err)
	}
	local := map[string]string{}
	for _, d := range f.Decls {
		if gd, ok := d.(*ast.GenDecl); ok && gd.Tok == token.CONST {
			for _, s := range gd.Specs {
				vs := s.(*ast.ValueSpec)
				for i, n := range vs.Names {
					if i < len(vs.Values) {
						if v, ok := evalConstString(vs.Values[i], local, apiConsts); ok {
							local[n.Name] = v
						}
					}
				}
			}
		}
	}
	var out []apiRoute
	ast.Inspect(f, func(n ast.Node) bool {
		call, ok := n.(*ast.CallExpr)
		if !ok {
			return true
		}
		sel, ok := call.Fun.(*ast.SelectorExpr)
		if !ok || (sel.Sel.Name != "Handle" && sel.Sel.Name != "HandleFunc") || len(call.Args) != 2 {
			return true
		}
		pattern, ok := evalConstString(call.Args[0], local, apiConsts)
		if !ok {
			t.Errorf("%s: route pattern (%T) is not a constant string this test can read", fset.Position(call.Pos()), call.Args[0])
			return true
		}
		method, path, found := strings.Cut(pattern, " ")
		if !found || !strings.HasPrefix(path, "/") {
			t.Errorf("%s: route %q has no method: every route names its method", fset.Position(call.Pos()), pattern)
			return true
		}
		out = append(out, normalRoute(method, path))
		return true
	})
	if len(out) == 0 {
		t.Fatalf("%s: no routes found", file)
	}
	return out
}

// documentedRoutes lists the document's operations by the server that
// serves them.
func documentedRoutes(t *testing.T, doc *openapi3.T) (hub, spawn []apiRoute) {
	t.Helper()
	for path, item := range doc.Paths.Map() {
		servers := doc.Servers
		if len(item.Servers) > 0 {
			servers = item.Servers
		}
		var onHub, onSpawn bool
		for _, s := range servers {
			switch s.URL {
			case hubServerURL:
				onHub = true
			case spawnServerURL:
				onSpawn = true
			default:
				t.Errorf("%s: server %q is neither %s nor %s", path, s.URL, hubServerURL, spawnServerURL)
			}
		}
		for method := range item.Operations() {
			r := normalRoute(method, path)
			if onHub {
				hub = append(hub, r)
			}
			if onSpawn {
				spawn = append(spawn, r)
			}
		}
	}
	return hub, spawn
}

func apiRouteSet(rs []apiRoute) map[apiRoute]bool {
	m := map[apiRoute]bool{}
	for _, r := range rs {
		m[r] = true
	}
	return m
}

// missingRoutes lists what is in a but not in b, sorted.
func missingRoutes(a, b []apiRoute) []string {
	in := apiRouteSet(b)
	var out []string
	for r := range apiRouteSet(a) {
		if !in[r] {
			out = append(out, r.String())
		}
	}
	sort.Strings(out)
	return out
}

func TestOpenAPI_EveryRouteIsDocumented(t *testing.T) {
	doc := loadOpenAPI(t)
	apiConsts := stringConsts(t, apiPackageDir)
	docHub, docSpawn := documentedRoutes(t, doc)
	cases := []struct {
		server, file string
		documented   []apiRoute
	}{
		{"hub", hubRoutesFile, docHub},
		{"spawn", spawnRoutesFile, docSpawn},
	}
	for _, tc := range cases {
		t.Run(tc.server, func(t *testing.T) {
			served := registeredRoutes(t, tc.file, apiConsts)
			if miss := missingRoutes(served, tc.documented); len(miss) > 0 {
				t.Errorf("the %s serves routes %s does not document for it: %s", tc.server, openAPIFile, strings.Join(miss, ", "))
			}
			if extra := missingRoutes(tc.documented, served); len(extra) > 0 {
				t.Errorf("%s documents routes the %s does not serve: %s", openAPIFile, tc.server, strings.Join(extra, ", "))
			}
		})
	}
}

// TestOpenAPI_RouteReaderFindsChanges proves the route comparison can fail:
// a route added to a copy of a routes file is reported.
func TestOpenAPI_RouteReaderFindsChanges(t *testing.T) {
	src := `package x
const prefix = "/v1"
func h() {
	mux.Handle("GET "+prefix+"/things/{id}", nil)
	mux.HandleFunc(http.MethodPost+" "+api.PathPoll, nil)
	mux.Handle("GET /assets/", nil)
	mux.Handle("GET /{$}", nil)
}`
	file := filepath.Join(t.TempDir(), "routes.go")
	if err := os.WriteFile(file, []byte(src), 0o644); err != nil {
		t.Fatal(err)
	}
	got := registeredRoutes(t, file, map[string]string{"PathPoll": "/v1/poll"})
	want := []apiRoute{{"GET", "/v1/things/{}"}, {"POST", "/v1/poll"}, {"GET", "/assets/{}"}, {"GET", "/"}}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("routes read: %v, want %v", got, want)
	}
	doc := []apiRoute{normalRoute("GET", "/v1/things/{thing}"), normalRoute("POST", "/v1/poll"), normalRoute("GET", "/assets/{file}")}
	if miss := missingRoutes(got, doc); !slices.Equal(miss, []string{"GET /"}) {
		t.Fatalf("undocumented routes: %v, want [GET /]", miss)
	}
}

// ------------------------------------------------------------- Go types

// schemaTypes maps every object schema of the document to the Go type whose
// JSON it describes.
var schemaTypes = map[string]reflect.Type{
	"Error":               reflect.TypeFor[api.Error](),
	"User":                reflect.TypeFor[api.User](),
	"UserCreate":          reflect.TypeFor[api.UserCreate](),
	"UserUpdate":          reflect.TypeFor[api.UserUpdate](),
	"Crawler":             reflect.TypeFor[api.Crawler](),
	"CrawlerCreate":       reflect.TypeFor[api.CrawlerCreate](),
	"CrawlerUpdate":       reflect.TypeFor[api.CrawlerUpdate](),
	"Node":                reflect.TypeFor[api.Node](),
	"ReloadRequest":       reflect.TypeFor[api.ReloadRequest](),
	"ReloadResponse":      reflect.TypeFor[api.ReloadResponse](),
	"Comment":             reflect.TypeFor[api.Comment](),
	"Sentiment":           reflect.TypeFor[api.Sentiment](),
	"Engagement":          reflect.TypeFor[api.Engagement](),
	"CommentPage":         reflect.TypeFor[api.CommentPage](),
	"SearchPage":          reflect.TypeFor[api.SearchPage](),
	"TermActivity":        reflect.TypeFor[api.TermActivity](),
	"TermStep":            reflect.TypeFor[api.TermStep](),
	"Comparison":          reflect.TypeFor[api.Comparison](),
	"CompareSeries":       reflect.TypeFor[api.CompareSeries](),
	"CompareStep":         reflect.TypeFor[api.CompareStep](),
	"Terms":               reflect.TypeFor[api.Terms](),
	"AlertRuleCreate":     reflect.TypeFor[api.AlertRuleCreate](),
	"AlertRule":           reflect.TypeFor[api.AlertRule](),
	"AlertSample":         reflect.TypeFor[api.AlertSample](),
	"AlertWebhook":        reflect.TypeFor[api.AlertWebhook](),
	"AlertDelivery":       reflect.TypeFor[api.AlertDelivery](),
	"AlertEvent":          reflect.TypeFor[api.AlertEvent](),
	"AlertPreview":        reflect.TypeFor[api.AlertPreview](),
	"AlertPreviewResult":  reflect.TypeFor[api.AlertPreviewResult](),
	"BacktestAlert":       reflect.TypeFor[api.BacktestAlert](),
	"TermCount":           reflect.TypeFor[api.TermCount](),
	"Activity":            reflect.TypeFor[api.Activity](),
	"ActivityStep":        reflect.TypeFor[api.ActivityStep](),
	"Suggestions":         reflect.TypeFor[api.Suggestions](),
	"Suggestion":          reflect.TypeFor[api.Suggestion](),
	"Thread":              reflect.TypeFor[api.Thread](),
	"IncrementAnalytics":  reflect.TypeFor[api.IncrementAnalytics](),
	"MinuteActivity":      reflect.TypeFor[api.MinuteActivity](),
	"HourTerms":           reflect.TypeFor[api.HourTerms](),
	"Authors":             reflect.TypeFor[api.Authors](),
	"AuthorCount":         reflect.TypeFor[api.AuthorCount](),
	"Breakdown":           reflect.TypeFor[api.Breakdown](),
	"ShareCount":          reflect.TypeFor[api.ShareCount](),
	"HourAuthors":         reflect.TypeFor[api.HourAuthors](),
	"AuthorTally":         reflect.TypeFor[api.AuthorTally](),
	"HourLangs":           reflect.TypeFor[api.HourLangs](),
	"LangTally":           reflect.TypeFor[api.LangTally](),
	"QueryValidate":       reflect.TypeFor[api.QueryValidate](),
	"QueryValidation":     reflect.TypeFor[api.QueryValidation](),
	"Event":               reflect.TypeFor[api.Event](),
	"HubHealth":           reflect.TypeFor[api.HubHealth](),
	"HealthNode":          reflect.TypeFor[api.HealthNode](),
	"HealthCrawlers":      reflect.TypeFor[api.HealthCrawlers](),
	"SpawnHealth":         reflect.TypeFor[api.SpawnHealth](),
	"HealthSubscriber":    reflect.TypeFor[api.HealthSubscriber](),
	"HealthDataSource":    reflect.TypeFor[api.HealthDataSource](),
	"RegisterRequest":     reflect.TypeFor[api.RegisterRequest](),
	"DrainRequest":        reflect.TypeFor[api.DrainRequest](),
	"UnreachableLeader":   reflect.TypeFor[api.UnreachableLeader](),
	"RegisterResponse":    reflect.TypeFor[api.RegisterResponse](),
	"SubscriberSpec":      reflect.TypeFor[api.SubscriberSpec](),
	"Cursor":              reflect.TypeFor[api.Cursor](),
	"SubscribersRequest":  reflect.TypeFor[api.SubscribersRequest](),
	"SubscriberResult":    reflect.TypeFor[api.SubscriberResult](),
	"SubscribersResponse": reflect.TypeFor[api.SubscribersResponse](),
	"RemoveRequest":       reflect.TypeFor[api.RemoveRequest](),
	"Lease":               reflect.TypeFor[api.Lease](),
	"SubscriberRef":       reflect.TypeFor[api.SubscriberRef](),
	"PollRequest":         reflect.TypeFor[api.PollRequest](),
	"RecoverRequest":      reflect.TypeFor[api.RecoverRequest](),
	"RecoverResponse":     reflect.TypeFor[api.RecoverResponse](),
	"Retraction":          reflect.TypeFor[api.Retraction](),
	"RetractRequest":      reflect.TypeFor[api.RetractRequest](),
	"RetractResponse":     reflect.TypeFor[api.RetractResponse](),
	"Forget":              reflect.TypeFor[api.Forget](),
	"ComplianceRequest":   reflect.TypeFor[api.ComplianceRequest](),
	"ComplianceResult":    reflect.TypeFor[api.ComplianceResult](),
	"ComplianceRun":       reflect.TypeFor[api.ComplianceRun](),
	"ForgetResult":        reflect.TypeFor[api.ForgetResult](),
	"Increment":           reflect.TypeFor[api.Increment](),
	"SubscriberStatus":    reflect.TypeFor[api.SubscriberStatus](),
	"DataSourceStatus":    reflect.TypeFor[api.DataSourceStatus](),
	"PollResponse":        reflect.TypeFor[api.PollResponse](),
	"Scaling":             reflect.TypeFor[api.Scaling](),
	"SourceInfo":          reflect.TypeFor[api.SourceInfo](),
	"SourceSetting":       reflect.TypeFor[api.SourceSetting](),
	"CrawlerHistory":      reflect.TypeFor[api.CrawlerHistory](),
	"CrawlerHistories":    reflect.TypeFor[api.CrawlerHistories](),
}

// semanticRequired are admin request bodies whose required fields say what
// the hub needs, not what Go always writes.
var semanticRequired = map[string]bool{"UserCreate": true, "UserUpdate": true, "CrawlerCreate": true, "CrawlerUpdate": true,
	"AlertRuleCreate": true, "AlertPreview": true}

// jsonField is one field as encoding/json writes it.
type jsonField struct {
	name   string
	typ    reflect.Type
	always bool // written even when zero
}

func jsonFields(t reflect.Type) []jsonField {
	var out []jsonField
	for f := range t.Fields() {
		if !f.IsExported() {
			continue
		}
		tag := f.Tag.Get("json")
		if tag == "-" {
			continue
		}
		name, opts, _ := strings.Cut(tag, ",")
		if name == "" {
			name = f.Name
		}
		omit := false
		for _, o := range strings.Split(opts, ",") {
			switch o {
			case "omitzero":
				omit = true
			case "omitempty":
				// omitempty leaves structs (time.Time included) in place.
				switch f.Type.Kind() {
				case reflect.Struct, reflect.Array:
				default:
					omit = true
				}
			}
		}
		out = append(out, jsonField{name: name, typ: f.Type, always: !omit})
	}
	return out
}

var (
	goTimeType     = reflect.TypeFor[time.Time]()
	goDurationType = reflect.TypeFor[api.Duration]()
)

// checkSchemaType reports how the schema s fails to describe values of Go
// type typ ("" when it describes them).
func checkSchemaType(s *openapi3.SchemaRef, typ reflect.Type) string {
	if s == nil || s.Value == nil {
		return "no schema"
	}
	v := s.Value
	refName := strings.TrimPrefix(s.Ref, "#/components/schemas/")
	if typ.Kind() == reflect.Pointer {
		typ = typ.Elem()
	}
	want := func(kind string) string {
		if !v.Type.Is(kind) {
			return fmt.Sprintf("Go %s is a JSON %s, the document says %v", typ, kind, v.Type.Slice())
		}
		return ""
	}
	switch {
	case typ == goTimeType:
		if msg := want("string"); msg != "" {
			return msg
		}
		if v.Format != "date-time" {
			return "a time needs format date-time"
		}
		return ""
	case typ == goDurationType:
		if refName != "Duration" {
			return "an api.Duration is a #/components/schemas/Duration"
		}
		return ""
	}
	switch typ.Kind() {
	case reflect.String:
		return want("string")
	case reflect.Bool:
		return want("boolean")
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64,
		reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		if msg := want("integer"); msg != "" {
			return msg
		}
		if (typ.Kind() == reflect.Int64 || typ.Kind() == reflect.Uint64) && v.Format != "int64" {
			return fmt.Sprintf("Go %s needs format int64", typ)
		}
		if typ.Kind() >= reflect.Uint && typ.Kind() <= reflect.Uint64 && (v.Min == nil || *v.Min < 0) {
			return fmt.Sprintf("Go %s needs minimum 0", typ)
		}
		return ""
	case reflect.Float32, reflect.Float64:
		return want("number")
	case reflect.Slice:
		if typ.Elem().Kind() == reflect.Uint8 { // encoding/json writes []byte as a base64 string
			if msg := want("string"); msg != "" {
				return msg
			}
			if v.Format != "byte" {
				return fmt.Sprintf("Go %s needs format byte", typ)
			}
			return ""
		}
		if msg := want("array"); msg != "" {
			return msg
		}
		if msg := checkSchemaType(v.Items, typ.Elem()); msg != "" {
			return "items: " + msg
		}
		return ""
	case reflect.Map:
		if msg := want("object"); msg != "" {
			return msg
		}
		if msg := checkSchemaType(v.AdditionalProperties.Schema, typ.Elem()); msg != "" {
			return "values: " + msg
		}
		return ""
	case reflect.Struct:
		if schemaTypes[refName] != typ {
			return fmt.Sprintf("Go %s must be a $ref to its own schema, got %q", typ, s.Ref)
		}
		return ""
	}
	return fmt.Sprintf("Go %s has no JSON mapping in this test", typ)
}

// schemaMismatches compares one object schema with its Go type.
func schemaMismatches(name string, schema *openapi3.Schema, typ reflect.Type) []string {
	var out []string
	fields := jsonFields(typ)
	var goRequired []string
	seen := map[string]bool{}
	for _, f := range fields {
		seen[f.name] = true
		if f.always {
			goRequired = append(goRequired, f.name)
		}
		p, ok := schema.Properties[f.name]
		if !ok {
			out = append(out, fmt.Sprintf("%s: Go field %q is missing", name, f.name))
			continue
		}
		if msg := checkSchemaType(p, f.typ); msg != "" {
			out = append(out, fmt.Sprintf("%s.%s: %s", name, f.name, msg))
		}
	}
	for p := range schema.Properties {
		if !seen[p] {
			out = append(out, fmt.Sprintf("%s: property %q is not a field of Go %s", name, p, typ))
		}
	}
	for _, r := range schema.Required {
		if !seen[r] {
			out = append(out, fmt.Sprintf("%s: required %q is not a field", name, r))
		}
	}
	if !semanticRequired[name] {
		got := slices.Sorted(slices.Values(schema.Required))
		slices.Sort(goRequired)
		if !slices.Equal(got, goRequired) {
			out = append(out, fmt.Sprintf("%s: required %v, but Go always writes %v", name, got, goRequired))
		}
	}
	return out
}

func TestOpenAPI_SchemasMatchGoTypes(t *testing.T) {
	doc := loadOpenAPI(t)
	for name, ref := range doc.Components.Schemas {
		s := ref.Value
		if !s.Type.Is("object") {
			continue
		}
		typ, ok := schemaTypes[name]
		if !ok {
			t.Errorf("schema %s has no Go type in schemaTypes", name)
			continue
		}
		for _, msg := range schemaMismatches(name, s, typ) {
			t.Error(msg)
		}
	}
	for name := range schemaTypes {
		if _, ok := doc.Components.Schemas[name]; !ok {
			t.Errorf("Go type of schema %s has no schema in the document", name)
		}
	}
}

// TestOpenAPI_SchemaCheckFindsDrift proves the Go type comparison can fail.
func TestOpenAPI_SchemaCheckFindsDrift(t *testing.T) {
	doc := loadOpenAPI(t)
	user := *doc.Components.Schemas["User"].Value
	cases := []struct {
		name   string
		change func(s *openapi3.Schema)
		want   string
	}{
		{"renamed field", func(s *openapi3.Schema) {
			s.Properties = maps.Clone(s.Properties)
			s.Properties["comment_limits"] = s.Properties["comment_limit"]
			delete(s.Properties, "comment_limit")
		}, `Go field "comment_limit" is missing`},
		{"wrong type", func(s *openapi3.Schema) {
			s.Properties = maps.Clone(s.Properties)
			s.Properties["usage"] = openapi3.NewStringSchema().NewRef()
		}, "User.usage: Go int64 is a JSON integer"},
		{"not required", func(s *openapi3.Schema) {
			s.Required = slices.DeleteFunc(slices.Clone(s.Required), func(r string) bool { return r == "state" })
		}, "but Go always writes"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			s := user
			tc.change(&s)
			got := strings.Join(schemaMismatches("User", &s, reflect.TypeFor[api.User]()), "\n")
			if !strings.Contains(got, tc.want) {
				t.Fatalf("mismatches %q do not mention %q", got, tc.want)
			}
		})
	}
	if got := schemaMismatches("User", &user, reflect.TypeFor[api.User]()); len(got) > 0 {
		t.Fatalf("unchanged User schema: %v", got)
	}
}

// --------------------------------------------------------------- traffic

// oaValidator checks requests and answers against the document and counts
// which operations answered with which status.
type oaValidator struct {
	router routers.Router
	opts   *openapi3filter.Options

	mu     sync.Mutex
	errs   []string
	seen   map[string]map[int]int // "METHOD /doc/path" → status → answers
	closed bool
}

func newOAValidator(t *testing.T, doc *openapi3.T) *oaValidator {
	t.Helper()
	// The servers' addresses are ports picked at random: match paths only.
	doc.Servers = nil
	for _, item := range doc.Paths.Map() {
		item.Servers = nil
	}
	router, err := gorillamux.NewRouter(doc)
	if err != nil {
		t.Fatal(err)
	}
	tokens := map[string]string{"adminToken": clustertest.AdminToken, "nodeToken": clustertest.NodeToken}
	opts := &openapi3filter.Options{
		IncludeResponseStatus: true,
		MultiError:            true,
		// The token each route takes: a call with another fails validation,
		// so a route documented with the wrong scheme fails here.
		AuthenticationFunc: func(_ context.Context, in *openapi3filter.AuthenticationInput) error {
			want, ok := tokens[in.SecuritySchemeName]
			if !ok {
				return fmt.Errorf("unknown security scheme %q", in.SecuritySchemeName)
			}
			if in.RequestValidationInput.Request.Header.Get("Authorization") != "Bearer "+want {
				return fmt.Errorf("the request does not carry the %s", in.SecuritySchemeName)
			}
			return nil
		},
	}
	return &oaValidator{router: router, opts: opts, seen: map[string]map[int]int{}}
}

func (v *oaValidator) fail(format string, args ...any) {
	v.mu.Lock()
	defer v.mu.Unlock()
	if !v.closed {
		v.errs = append(v.errs, fmt.Sprintf(format, args...))
	}
}

func (v *oaValidator) record(op string, status int) {
	v.mu.Lock()
	defer v.mu.Unlock()
	if v.seen[op] == nil {
		v.seen[op] = map[int]int{}
	}
	v.seen[op][status]++
}

// answered reports whether op has answered with status.
func (v *oaValidator) answered(op string, status int) bool {
	v.mu.Lock()
	defer v.mu.Unlock()
	return v.seen[op][status] > 0
}

// finish reports every validation failure so far and stops collecting, so
// traffic during shutdown is not judged.
func (v *oaValidator) finish(t *testing.T) {
	t.Helper()
	v.mu.Lock()
	defer v.mu.Unlock()
	v.closed = true
	for _, e := range v.errs {
		t.Error(e)
	}
}

// exchange sends req through base and validates the answer. It returns the
// answer (body readable again) and the request's own validation error,
// which the caller judges: a deliberately bad request should fail it.
func (v *oaValidator) exchange(req *http.Request, base http.RoundTripper) (resp *http.Response, reqErr, err error) {
	var body []byte
	if req.Body != nil {
		if body, err = io.ReadAll(req.Body); err != nil {
			return nil, nil, err
		}
		req.Body.Close()
		req.Body = io.NopCloser(bytes.NewReader(body))
	}
	where := req.Method + " " + req.URL.Path
	rt, params, err := v.router.FindRoute(req)
	if err != nil {
		v.fail("%s: not in the document: %v", where, err)
		resp, err = base.RoundTrip(req)
		return resp, nil, err
	}
	check := req.Clone(req.Context())
	check.Body = io.NopCloser(bytes.NewReader(body))
	in := &openapi3filter.RequestValidationInput{Request: check, PathParams: params, Route: rt, Options: v.opts}
	reqErr = openapi3filter.ValidateRequest(req.Context(), in)

	resp, err = base.RoundTrip(req)
	if err != nil {
		return nil, reqErr, err
	}
	b, err := io.ReadAll(resp.Body)
	resp.Body.Close()
	if err != nil {
		return nil, reqErr, err
	}
	resp.Body = io.NopCloser(bytes.NewReader(b))
	out := &openapi3filter.ResponseValidationInput{RequestValidationInput: in, Status: resp.StatusCode, Header: resp.Header, Options: v.opts}
	out.SetBodyBytes(b)
	if err := openapi3filter.ValidateResponse(req.Context(), out); err != nil {
		v.fail("%s → %d: the answer does not match the document: %v\n%s", where, resp.StatusCode, err, b)
	}
	v.record(rt.Method+" "+rt.Path, resp.StatusCode)
	return resp, reqErr, nil
}

// transport validates every request and answer it carries; a request the
// document refuses is a failure.
func (v *oaValidator) transport(base http.RoundTripper) http.RoundTripper {
	return roundTripFunc(func(req *http.Request) (*http.Response, error) {
		resp, reqErr, err := v.exchange(req, base)
		if reqErr != nil {
			v.fail("%s %s: the request does not match the document: %v", req.Method, req.URL.Path, reqErr)
		}
		return resp, err
	})
}

type roundTripFunc func(*http.Request) (*http.Response, error)

func (f roundTripFunc) RoundTrip(r *http.Request) (*http.Response, error) { return f(r) }

// proxy serves a validating reverse proxy to target, so traffic between
// the hub and its spawns passes through the validator unchanged.
func (v *oaValidator) proxy(t *testing.T, target string) *httptest.Server {
	t.Helper()
	u, err := url.Parse(target)
	if err != nil {
		t.Fatal(err)
	}
	rp := httputil.NewSingleHostReverseProxy(u)
	rp.Transport = v.transport(http.DefaultTransport)
	rp.ErrorHandler = func(w http.ResponseWriter, r *http.Request, err error) {
		// The server behind is gone (a spawn stopping): a transport error
		// for the caller, nothing to validate.
		http.Error(w, err.Error(), http.StatusBadGateway)
	}
	srv := httptest.NewServer(rp)
	t.Cleanup(srv.Close)
	return srv
}

// rawCall sends one request outside api.Client, validates the answer and
// returns the request's own validation error.
func (v *oaValidator) rawCall(t *testing.T, method, target, token, body string) (int, []byte, error) {
	t.Helper()
	var r io.Reader
	if body != "" {
		r = strings.NewReader(body)
	}
	req, err := http.NewRequest(method, target, r)
	if err != nil {
		t.Fatal(err)
	}
	if body != "" {
		req.Header.Set("Content-Type", "application/json")
	}
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	resp, reqErr, err := v.exchange(req, http.DefaultTransport)
	if err != nil {
		t.Fatal(err)
	}
	b, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	return resp.StatusCode, b, reqErr
}

// addValidatedSpawn starts a spawn whose registration reaches the hub
// through hubProxy and which the hub reaches through a validating proxy of
// its own. It returns the spawn and its direct URL.
func addValidatedSpawn(c *cluster, v *oaValidator, hubProxy string, edits ...func(*spawnapp.Settings)) *spawnapp.Spawn {
	c.t.Helper()
	listen := testkit.FreeAddr(c.t)
	front := v.proxy(c.t, "http://"+listen)
	return c.AddSpawn(func(cfg *spawnapp.Settings) {
		cfg.Hub = hubProxy
		cfg.Listen = listen
		cfg.Advertise = front.URL
		for _, edit := range edits {
			edit(cfg)
		}
	})
}

func TestOpenAPI_TrafficMatchesDocument(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a hub and two spawns")
	}
	doc := loadOpenAPI(t)
	v := newOAValidator(t, doc)
	c := newCluster(t, clusterOpts{spawns: 0, allowTargets: []string{"127.0.0.0/8"}})
	hubProxy := v.proxy(t, c.Hub.URL())
	// The first spawn holds X API v2 credentials, for the compliance runs.
	x, xURL := xv2.Start(t, xv2.Options{BearerToken: "bearer"})
	withX := func(cfg *spawnapp.Settings) { cfg.Twitter.APIURL, cfg.Twitter.BearerToken = xURL, "bearer" }
	spawns := []*spawnapp.Spawn{addValidatedSpawn(c, v, hubProxy.URL, withX), addValidatedSpawn(c, v, hubProxy.URL)}
	ctx := c.Ctx
	client := api.NewClient(c.Hub.URL(), clustertest.AdminToken, &http.Client{Transport: v.transport(http.DefaultTransport), Timeout: clustertest.WaitTimeout})
	testkit.WaitFor(t, clustertest.WaitTimeout, "both spawns registered", func() bool {
		nodes, err := client.ListNodes(ctx)
		return err == nil && len(nodes) == 2
	})

	// Admin API, the way bwctl uses it.
	must := func(err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}
	u, err := client.CreateUser(ctx, api.UserCreate{Name: "acme", CommentLimit: 0})
	must(err)
	_, err = client.ListUsers(ctx)
	must(err)
	_, err = client.GetUser(ctx, u.ID)
	must(err)
	limit := int64(100000)
	_, err = client.UpdateUser(ctx, u.ID, api.UserUpdate{CommentLimit: &limit})
	must(err)

	news, sport := c.FeedURL("oa-news"), c.FeedURL("oa-sport")
	a, err := client.CreateCrawler(ctx, api.CrawlerCreate{UserID: u.ID, Source: api.SourceRSS, Query: []string{news}, Keywords: []string{"golang"}})
	must(err)
	b, err := client.CreateCrawler(ctx, api.CrawlerCreate{UserID: u.ID, Source: api.SourceRSS, Query: []string{news}, CommentLimit: 1000})
	must(err)
	cr, err := client.CreateCrawler(ctx, api.CrawlerCreate{UserID: u.ID, Source: api.SourceRSS, Query: []string{sport}})
	must(err)
	testkit.WaitFor(t, clustertest.WaitTimeout, "three crawlers running", func() bool {
		list, err := client.ListCrawlers(ctx)
		if err != nil || len(list) != 3 {
			return false
		}
		for _, x := range list {
			if x.State != api.StateRunning {
				return false
			}
		}
		return true
	})
	for i := range 5 {
		c.Feeds.Publish("oa-news", feedserver.Item{GUID: fmt.Sprintf("n%d", i), Title: "golang news", Description: "golang news " + strconv.Itoa(i), Published: time.Now()})
		c.Feeds.Publish("oa-sport", feedserver.Item{GUID: fmt.Sprintf("s%d", i), Title: "match", Description: "match " + strconv.Itoa(i), Published: time.Now()})
	}
	testkit.WaitFor(t, clustertest.WaitTimeout, "usage counted and comments readable", func() bool {
		x, err := client.GetCrawler(ctx, b.ID)
		if err != nil || x.Usage < 5 {
			return false
		}
		got, err := client.RecentComments(ctx, a.ID, 3)
		return err == nil && len(got) > 0
	})
	exported, err := client.ExportComments(ctx, a.ID, api.ExportQuery{Limit: 2})
	must(err)
	// Analytics and conversations (the hub reads a thread through a spawn).
	_, err = client.CrawlerTerms(ctx, a.ID, "24h", 10)
	must(err)
	_, err = client.UserTerms(ctx, u.ID, "7d", 5)
	must(err)
	_, err = client.CrawlerAuthors(ctx, a.ID, "24h", 10)
	must(err)
	_, err = client.UserAuthors(ctx, u.ID, "7d", 5)
	must(err)
	_, err = client.CrawlerBreakdown(ctx, a.ID, "1h")
	must(err)
	_, err = client.UserBreakdown(ctx, u.ID, "24h")
	must(err)
	_, err = client.CrawlerActivity(ctx, b.ID, "1h", "1m")
	must(err)
	gone, err := client.CreateUser(ctx, api.UserCreate{Name: "leaving"})
	must(err)
	must(client.DeleteUser(ctx, gone.ID))
	_, err = client.CrawlerSuggestions(ctx, a.ID)
	must(err)
	recent, err := client.RecentComments(ctx, a.ID, 1)
	must(err)
	_, err = client.Thread(ctx, a.ID, recent[0].ID)
	must(err)
	_, err = client.ExportComments(ctx, a.ID, api.ExportQuery{Cursor: exported.NextCursor, Since: time.Now().Add(-time.Hour)})
	must(err)
	_, err = client.ValidateQuery(ctx, api.QueryValidate{Source: api.SourceTwitter, Query: "golang OR rust"})
	must(err)
	// Search, drill-down, comparison and export (the dashboard's analyst
	// reads).
	found, err := client.SearchComments(ctx, a.ID, api.SearchQuery{Q: `golang -rust OR "golang news"`, ExportQuery: api.ExportQuery{Limit: 2}})
	must(err)
	_, err = client.SearchComments(ctx, a.ID, api.SearchQuery{Q: "golang", ExportQuery: api.ExportQuery{Cursor: found.NextCursor, Limit: 2}})
	must(err)
	_, err = client.SearchUserComments(ctx, u.ID, api.SearchQuery{Q: "match", ExportQuery: api.ExportQuery{Since: time.Now().Add(-time.Hour)}})
	must(err)
	_, err = client.TermActivity(ctx, a.ID, "golang", "24h", true)
	must(err)
	_, err = client.Compare(ctx, []int64{a.ID, b.ID, cr.ID}, false, "1h", "1m")
	must(err)
	_, err = client.Compare(ctx, []int64{u.ID}, true, "24h", "")
	must(err)
	for _, path := range []string{"/v1/crawlers/" + idText(a.ID) + "/comments/export?format=csv&q=golang", "/v1/users/" + idText(u.ID) + "/comments/export?q=match"} {
		status, body, reqErr := v.rawCall(t, http.MethodGet, c.Hub.URL()+path, clustertest.AdminToken, "")
		if status != http.StatusOK || reqErr != nil || len(body) == 0 {
			t.Fatalf("GET %s: %d %.200s %v", path, status, body, reqErr)
		}
	}
	_, err = client.UpdateCrawler(ctx, a.ID, api.CrawlerUpdate{Keywords: []string{}})
	must(err)
	retention := "30d"
	_, err = client.UpdateCrawler(ctx, b.ID, api.CrawlerUpdate{Retention: &retention})
	must(err)
	_, err = client.UpdateUser(ctx, u.ID, api.UserUpdate{Retention: &retention})
	must(err)
	// A forget reaches the spawn's POST /v1/retractions.
	_, err = client.Forget(ctx, api.SourceRSS, "nobody@example.test")
	must(err)
	// An X compliance run reaches the spawn holding X's credentials.
	_, err = client.CreateCrawler(ctx, api.CrawlerCreate{UserID: u.ID, Source: api.SourceTwitter, Query: []string{"gophers"}})
	must(err)
	testkit.WaitFor(t, clustertest.WaitTimeout, "the X crawler's stream", func() bool { return x.Connected() })
	_, err = client.RunCompliance(ctx)
	must(err)
	_, err = client.ComplianceRuns(ctx)
	must(err)
	off := false
	_, err = client.UpdateCrawler(ctx, cr.ID, api.CrawlerUpdate{Enabled: &off})
	must(err)
	testkit.WaitFor(t, clustertest.WaitTimeout, "the disabled crawler removed from its spawn", func() bool {
		return v.answered("POST /v1/subscribers/remove", http.StatusNoContent)
	})
	must(client.DeleteCrawler(ctx, cr.ID))
	for _, kind := range []string{"hard", "soft"} {
		_, err = client.Reload(ctx, kind)
		must(err)
	}
	_, err = client.ListNodes(ctx)
	must(err)
	_, err = client.Health(ctx)
	must(err)
	if kinds, err := client.Sources(ctx); err != nil || len(kinds) == 0 {
		t.Fatalf("sources: %v, %v", kinds, err)
	}
	_, err = client.Scaling(ctx)
	must(err)
	_, err = client.CrawlerHistory(ctx, b.ID)
	must(err)
	_, err = client.CrawlerHistories(ctx, []int64{a.ID, b.ID})
	must(err)
	// Alert rules: a webhook on this machine (the hub allows loopback).
	hook := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { w.WriteHeader(http.StatusNoContent) }))
	defer hook.Close()
	rule, err := client.CreateAlertRule(ctx, api.AlertRuleCreate{CrawlerID: b.ID, Kind: api.AlertSpike, Webhook: hook.URL, Secret: "oa"})
	must(err)
	_, err = client.ListAlertRules(ctx)
	must(err)
	_, err = client.GetAlertRule(ctx, rule.ID)
	must(err)
	_, err = client.TestAlertRule(ctx, rule.ID)
	must(err)
	_, err = client.AlertEvents(ctx, rule.ID, 5)
	must(err)
	_, err = client.PreviewAlertRule(ctx, api.AlertPreview{CrawlerID: b.ID, Kind: api.AlertSpike})
	must(err)
	must(client.DeleteAlertRule(ctx, rule.ID))
	status, body, reqErr := v.rawCall(t, http.MethodGet, c.Hub.URL()+"/v1/events", clustertest.AdminToken, "")
	if status != http.StatusOK || reqErr != nil {
		t.Fatalf("GET /v1/events: %d %s %v", status, body, reqErr)
	}

	// Open routes of both servers.
	for _, base := range []string{c.Hub.URL(), spawns[0].URL()} {
		for _, path := range []string{"/healthz", api.PathHealth, "/metrics"} {
			status, body, reqErr := v.rawCall(t, http.MethodGet, base+path, "", "")
			if status != http.StatusOK || reqErr != nil {
				t.Fatalf("GET %s%s: %d %.200s %v", base, path, status, body, reqErr)
			}
		}
	}

	// The dashboard: its page, its files, and a revalidation.
	for _, path := range []string{"/", "/assets/app.js", "/assets/style.css", "/assets/favicon.svg"} {
		status, body, reqErr := v.rawCall(t, http.MethodGet, c.Hub.URL()+path, "", "")
		if status != http.StatusOK || reqErr != nil || len(body) == 0 {
			t.Fatalf("GET %s: %d %.200s %v", path, status, body, reqErr)
		}
	}
	page, err := http.Get(c.Hub.URL() + "/")
	must(err)
	page.Body.Close()
	req, err := http.NewRequest(http.MethodGet, c.Hub.URL()+"/", nil)
	must(err)
	req.Header.Set("If-None-Match", page.Header.Get("ETag"))
	resp, reqErr, err := v.exchange(req, http.DefaultTransport)
	must(err)
	resp.Body.Close()
	if resp.StatusCode != http.StatusNotModified || reqErr != nil {
		t.Fatalf("GET / with its ETag: %d %v, want 304", resp.StatusCode, reqErr)
	}

	// Error answers: each is validated, and the document must agree with
	// the server about whether the request itself was acceptable.
	hub, spawn := c.Hub.URL(), spawns[0].URL()
	epoch := c.Hub.Epoch()
	cases := []struct {
		name, method, url, token, body string
		status                         int
		docAccepts                     bool
	}{
		{"malformed JSON", "POST", hub + "/v1/users", clustertest.AdminToken, `{"name": `, 400, false},
		{"unknown field", "POST", hub + "/v1/users", clustertest.AdminToken, `{"nom": "x"}`, 400, false},
		{"wrong field type", "POST", hub + "/v1/crawlers", clustertest.AdminToken, `{"user_id": "1", "source": "rss", "query": ["http://127.0.0.1/f"]}`, 400, false},
		{"unknown source", "POST", hub + "/v1/crawlers", clustertest.AdminToken, fmt.Sprintf(`{"user_id": %d, "source": "myspace", "query": ["x"]}`, u.ID), 400, true},
		{"source not a kind's name", "POST", hub + "/v1/crawlers", clustertest.AdminToken, fmt.Sprintf(`{"user_id": %d, "source": "My Space", "query": ["x"]}`, u.ID), 400, false},
		{"unknown user", "POST", hub + "/v1/crawlers", clustertest.AdminToken, `{"user_id": 999999, "source": "twitter", "query": ["go"]}`, 400, true},
		{"nothing to update", "PATCH", hub + "/v1/crawlers/" + idText(a.ID), clustertest.AdminToken, `{}`, 400, false},
		{"user limit missing", "PATCH", hub + "/v1/users/" + idText(u.ID), clustertest.AdminToken, `{}`, 400, false},
		{"bad reload kind", "POST", hub + "/v1/reload", clustertest.AdminToken, `{"kind": "medium"}`, 400, false},
		{"id not a number", "GET", hub + "/v1/users/abc", clustertest.AdminToken, "", 400, false},
		{"id zero", "GET", hub + "/v1/crawlers/0", clustertest.AdminToken, "", 400, false},
		{"n out of range", "GET", hub + "/v1/crawlers/" + idText(a.ID) + "/comments?n=0", clustertest.AdminToken, "", 400, false},
		{"unknown user id", "GET", hub + "/v1/users/999999", clustertest.AdminToken, "", 404, true},
		{"alert rule on an unknown crawler", "POST", hub + "/v1/alerts", clustertest.AdminToken, `{"crawler_id": 999999, "kind": "spike", "webhook": "http://127.0.0.1:9/x"}`, 400, true},
		{"alert rule to a private webhook", "POST", hub + "/v1/alerts", clustertest.AdminToken, `{"crawler_id": ` + idText(a.ID) + `, "kind": "spike", "webhook": "http://10.0.0.1/x"}`, 400, true},
		{"alert rule of an unknown kind", "POST", hub + "/v1/alerts", clustertest.AdminToken, `{"crawler_id": ` + idText(a.ID) + `, "kind": "surge", "webhook": "http://127.0.0.1:9/x"}`, 400, false},
		{"unknown alert rule", "GET", hub + "/v1/alerts/999999", clustertest.AdminToken, "", 404, true},
		{"unknown crawler", "GET", hub + "/v1/crawlers/999999", clustertest.AdminToken, "", 404, true},
		{"update unknown crawler", "PATCH", hub + "/v1/crawlers/999999", clustertest.AdminToken, `{"enabled": false}`, 404, true},
		{"delete unknown crawler", "DELETE", hub + "/v1/crawlers/999999", clustertest.AdminToken, "", 404, true},
		{"comments of unknown crawler", "GET", hub + "/v1/crawlers/999999/comments", clustertest.AdminToken, "", 404, true},
		{"history of unknown crawler", "GET", hub + "/v1/crawlers/999999/history", clustertest.AdminToken, "", 404, true},
		{"search: invalid query", "GET", hub + "/v1/crawlers/" + idText(a.ID) + "/comments?q=golang+%28", clustertest.AdminToken, "", 400, true},
		{"search: since after until", "GET", hub + "/v1/users/" + idText(u.ID) + "/comments?since=2024-05-02T00:00:00Z&until=2024-05-01T00:00:00Z", clustertest.AdminToken, "", 400, true},
		{"export: unknown format", "GET", hub + "/v1/crawlers/" + idText(a.ID) + "/comments/export?format=xml", clustertest.AdminToken, "", 400, false},
		{"compare: nothing to compare", "GET", hub + "/v1/compare", clustertest.AdminToken, "", 400, true},
		{"spawn: search", "GET", spawn + "/v1/comments/search?crawler_id=" + idText(a.ID) + "&q=golang", clustertest.NodeToken, "", 200, true},
		{"unknown dashboard file", "GET", hub + "/assets/nope.js", "", "", 404, true},
		{"scaling without a token", "GET", hub + "/v1/scaling", "", "", 401, false},
		{"missing admin token", "GET", hub + "/v1/crawlers", "", "", 401, false},
		{"wrong admin token", "GET", hub + "/v1/crawlers", "nope", "", 401, false},
		{"node token on the admin API", "GET", hub + "/v1/users", clustertest.NodeToken, "", 401, false},
		{"admin token on registration", "POST", hub + api.PathRegister, clustertest.AdminToken, `{"node_id": "x", "url": "http://127.0.0.1:1", "clock": 0}`, 401, false},
		{"bad node url", "POST", hub + api.PathRegister, clustertest.NodeToken, `{"node_id": "x", "url": "gopher://h", "clock": 0}`, 400, true},
		{"spawn: malformed upsert", "PUT", spawn + api.PathSubscribers, clustertest.NodeToken, `{"epoch": `, 400, false},
		{"spawn: wrong token", "PUT", spawn + api.PathSubscribers, "nope", `{"epoch": "x", "seq": 1, "subscribers": []}`, 401, false},
		{"spawn: stale upsert", "PUT", spawn + api.PathSubscribers, clustertest.NodeToken, `{"epoch": "` + epoch + `", "seq": 0, "subscribers": []}`, 409, true},
		{"spawn: stale remove", "POST", spawn + api.PathSubscribersRemove, clustertest.NodeToken, `{"epoch": "` + epoch + `", "seq": 0, "crawler_ids": [1]}`, 409, true},
		{"spawn: admin token on poll", "POST", spawn + api.PathPoll, clustertest.AdminToken, `{"epoch": "x", "node_id": "", "seq": 1, "subscribers": []}`, 401, false},
		{"spawn: bad crawler id", "GET", spawn + "/v1/comments?crawler_id=abc", clustertest.NodeToken, "", 400, false},
		{"spawn: comments", "GET", spawn + "/v1/comments?crawler_id=" + idText(a.ID) + "&n=5", clustertest.NodeToken, "", 200, true},
		{"spawn: recover a node's usage", "POST", spawn + api.PathRecover, clustertest.NodeToken, `{"epoch": "` + epoch + `", "node_id": "gone-node", "after_seq": 0}`, 200, true},
		{"spawn: recover from another epoch", "POST", spawn + api.PathRecover, clustertest.NodeToken, `{"epoch": "old", "node_id": "gone-node", "after_seq": 0}`, 409, true},
		{"spawn: recover without a node", "POST", spawn + api.PathRecover, clustertest.NodeToken, `{"epoch": "` + epoch + `", "node_id": "", "after_seq": 0}`, 400, true},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			status, body, reqErr := v.rawCall(t, tc.method, tc.url, tc.token, tc.body)
			if status != tc.status {
				t.Fatalf("%s %s: got %d %s, want %d", tc.method, tc.url, status, body, tc.status)
			}
			if accepted := reqErr == nil; accepted != tc.docAccepts {
				t.Errorf("the document accepts the request: %v, want %v (%v)", accepted, tc.docAccepts, reqErr)
			}
			if status >= 400 {
				var e api.Error
				if err := json.Unmarshal(body, &e); err != nil || e.Error == "" {
					t.Errorf("error body %s is not an Error with a message", body)
				}
			}
		})
	}

	// A body that is not JSON (a form, as an HTML form or a curl -d posts
	// it) is refused with 415 on either server, as the document says.
	for _, target := range []string{hub + "/v1/users", spawn + api.PathPoll} {
		req, err := http.NewRequest(http.MethodPost, target, strings.NewReader("name=acme"))
		must(err)
		req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
		req.Header.Set("Authorization", "Bearer "+clustertest.AdminToken)
		resp, _, err := v.exchange(req, http.DefaultTransport)
		must(err)
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		var e api.Error
		if resp.StatusCode != http.StatusUnsupportedMediaType || json.Unmarshal(body, &e) != nil || !strings.Contains(e.Error, "Content-Type: application/json") {
			t.Errorf("form-encoded POST %s: %d %s, want 415 naming the content type", target, resp.StatusCode, body)
		}
	}

	// Draining: an operator drains the second spawn, then the spawn
	// drains itself as on SIGTERM, telling the hub it drains and is done.
	_, err = client.DrainNode(ctx, spawns[1].ID())
	must(err)
	dctx, cancel := context.WithTimeout(ctx, clustertest.WaitTimeout)
	defer cancel()
	must(spawns[1].Node.Drain(dctx))

	// Every documented operation has answered with success at least once.
	for path, item := range doc.Paths.Map() {
		for method, op := range item.Operations() {
			key := method + " " + path
			ok := false
			for code := range op.Responses.Map() {
				if n, err := strconv.Atoi(code); err == nil && n < 300 && v.answered(key, n) {
					ok = true
				}
			}
			if !ok {
				t.Errorf("%s (%s) was never exercised with a successful answer", key, op.OperationID)
			}
		}
	}
	v.logSeen(t)
	v.finish(t)
}

// logSeen logs how often each operation answered with each status.
func (v *oaValidator) logSeen(t *testing.T) {
	t.Helper()
	v.mu.Lock()
	defer v.mu.Unlock()
	for _, op := range slices.Sorted(maps.Keys(v.seen)) {
		t.Logf("validated %-36s %v", op, v.seen[op])
	}
}

func idText(n int64) string { return strconv.FormatInt(n, 10) }
