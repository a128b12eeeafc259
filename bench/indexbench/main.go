// Command indexbench measures Bleve against the product's store scan on the
// comments BenchmarkSearch leaves in a file store (docs/benchmarks.md,
// "Search: scan against an index"). It is a module of its own so that the
// product does not depend on Bleve; it is not part of the product.
//
//	indexbench -mode index -store DIR -index DIR [-text bench|zipf]
//	indexbench -mode query -store DIR -index DIR [-runs 3]
//	indexbench -mode diff
package main

import (
	"bufio"
	"encoding/json"
	"flag"
	"fmt"
	"log"
	"math/rand/v2"
	"os"
	"path/filepath"
	stdregexp "regexp"
	"runtime"
	"runtime/pprof"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/blackwidow-crawl/blackwidow/api"
	"github.com/blackwidow-crawl/blackwidow/pkg/query"
	"github.com/blevesearch/bleve/v2"
	"github.com/blevesearch/bleve/v2/analysis/analyzer/custom"
	"github.com/blevesearch/bleve/v2/analysis/analyzer/standard"
	"github.com/blevesearch/bleve/v2/analysis/token/lowercase"
	"github.com/blevesearch/bleve/v2/analysis/tokenizer/regexp"
	"github.com/blevesearch/bleve/v2/index/scorch"
	"github.com/blevesearch/bleve/v2/mapping"
	bq "github.com/blevesearch/bleve/v2/search/query"
)

// indexLimit and storeSrc are the -limit and -nosrc flags.
var (
	unsafeBatch bool
	indexLimit  int
	storeSrc    = true
)

// questions are storetest.SearchQuestions.
var questions = []struct{ name, q string }{
	{"common", "needle"},
	{"rare", "thimble"},
	{"absent", "haystack"},
	{"boolean", `"dolor sit" needle -thimble`},
	{"from", "from:author4950"},
}

// qlWords is the query language's word (pkg/query/word.go) as a pattern
// tokenizer can say it: one character of a script written without spaces
// with the marks after it, or a run of letters (of the other scripts),
// digits, connectors and marks. (The timings in docs/benchmarks.md were
// taken with the earlier rule, a run of ASCII letters, digits, '_' and any
// non-ASCII character; the two cost the same to index.)
const unspaced = `\p{Han}\p{Hiragana}\p{Katakana}\p{Thai}\p{Lao}\p{Khmer}\p{Myanmar}`
const qlWords = `[` + unspaced + `]\p{M}*|(?:[^\P{L}` + unspaced + `]|[\p{Nd}\p{Nl}\p{Pc}\p{M}])+`

func newMapping(variant string) *mapping.IndexMappingImpl {
	im := bleve.NewIndexMapping()
	analyzer := standard.Name
	if variant == "ql" {
		if err := im.AddCustomTokenizer("qlwords", map[string]any{"type": regexp.Name, "regexp": qlWords}); err != nil {
			log.Fatal(err)
		}
		if err := im.AddCustomAnalyzer("ql", map[string]any{"type": custom.Name, "tokenizer": "qlwords",
			"token_filters": []string{lowercase.Name}}); err != nil {
			log.Fatal(err)
		}
		analyzer = "ql"
	}
	text := bleve.NewTextFieldMapping()
	text.Analyzer = analyzer
	text.Store, text.IncludeInAll, text.DocValues, text.IncludeTermVectors = false, false, false, true
	kw := func() *mapping.FieldMapping {
		m := bleve.NewKeywordFieldMapping()
		m.Store, m.IncludeInAll, m.DocValues, m.IncludeTermVectors = false, false, false, false
		return m
	}
	num := bleve.NewNumericFieldMapping()
	num.Store, num.IncludeInAll, num.DocValues = false, false, true
	src := bleve.NewTextFieldMapping()
	src.Index, src.Store, src.IncludeInAll, src.DocValues, src.IncludeTermVectors = false, true, false, false, false
	dm := bleve.NewDocumentStaticMapping()
	dm.AddFieldMappingsAt("text", text)
	dm.AddFieldMappingsAt("author", kw())
	dm.AddFieldMappingsAt("author_id", kw())
	dm.AddFieldMappingsAt("lang", kw())
	dm.AddFieldMappingsAt("published", num)
	dm.AddFieldMappingsAt("src", src)
	im.DefaultMapping = dm
	im.StoreDynamic, im.IndexDynamic, im.DocValuesDynamic = false, false, false
	return im
}

// doc is what the index holds of a comment. The ql variant lowercases
// author, author_id and lang as Query.Match does; the standard variant
// keeps them as stored.
func doc(variant string, c *api.Comment, line []byte) map[string]any {
	author, authorID, lang := c.Author, c.AuthorID, c.Lang
	if variant == "ql" {
		author = strings.ToLower(strings.TrimPrefix(author, "@"))
		authorID, lang = strings.ToLower(authorID), strings.ToLower(lang)
	}
	d := map[string]any{"text": c.Text, "author": author, "author_id": authorID, "lang": lang,
		"published": float64(c.PublishedAt.UnixMilli())}
	if storeSrc {
		d["src"] = string(line)
	}
	return d
}

// eachComment calls fn with every comment of crawler 1 in dir, oldest day
// first, each day file in written order.
func eachComment(dir string, fn func(c *api.Comment, line []byte)) {
	names, err := filepath.Glob(filepath.Join(dir, "1", "*.jsonl"))
	if err != nil {
		log.Fatal(err)
	}
	sort.Strings(names)
	for _, name := range names {
		f, err := os.Open(name)
		if err != nil {
			log.Fatal(err)
		}
		sc := bufio.NewScanner(f)
		sc.Buffer(make([]byte, 1<<20), 1<<20)
		for sc.Scan() {
			var c api.Comment
			if err := json.Unmarshal(sc.Bytes(), &c); err != nil {
				log.Fatal(err)
			}
			fn(&c, sc.Bytes())
		}
		if err := sc.Err(); err != nil {
			log.Fatal(err)
		}
		f.Close()
	}
}

// zipfText is a comment text of about 40 words drawn from a vocabulary of
// 100,000 words with Zipf's law (s = 1.1): a text whose index looks like a
// real one (the benchmark's text has six distinct words).
type zipfText struct {
	z     *rand.Zipf
	words []string
}

func newZipfText() *zipfText {
	r := rand.New(rand.NewPCG(1, 2))
	words := make([]string, 100_000)
	const letters = "abcdefghijklmnopqrstuvwxyz"
	for i := range words {
		n := 3 + r.IntN(8)
		b := make([]byte, n)
		for j := range b {
			b[j] = letters[r.IntN(len(letters))]
		}
		words[i] = string(b)
	}
	return &zipfText{z: rand.NewZipf(r, 1.1, 1, uint64(len(words)-1)), words: words}
}

func (z *zipfText) text(tail string) string {
	var b strings.Builder
	for i := range 40 {
		if i > 0 {
			b.WriteByte(' ')
		}
		b.WriteString(z.words[z.z.Uint64()])
	}
	b.WriteString(tail)
	return b.String()
}

func dirSize(dir string) int64 {
	var n int64
	filepath.Walk(dir, func(_ string, fi os.FileInfo, err error) error {
		if err == nil && !fi.IsDir() {
			n += fi.Size()
		}
		return nil
	})
	return n
}

// procStatus returns a field of /proc/self/status in MiB (VmRSS, VmHWM).
func procStatus(field string) float64 {
	b, _ := os.ReadFile("/proc/self/status")
	for _, l := range strings.Split(string(b), "\n") {
		if strings.HasPrefix(l, field+":") {
			kb, _ := strconv.ParseFloat(strings.Fields(l)[1], 64)
			return kb / 1024
		}
	}
	return 0
}

func indexMode(storeDir, indexDir, variant, textKind string, batchSize int) {
	if _, err := os.Stat(indexDir); err == nil {
		log.Fatalf("%s exists", indexDir)
	}
	var cfg map[string]any
	if unsafeBatch {
		cfg = map[string]any{"unsafe_batch": true}
	}
	idx, err := bleve.NewUsing(indexDir, newMapping(variant), scorch.Name, scorch.Name, cfg)
	if err != nil {
		log.Fatal(err)
	}
	var zt *zipfText
	if textKind == "zipf" {
		zt = newZipfText()
	}
	var lineBytes int64
	n := 0
	batch := idx.NewBatch()
	start := time.Now()
	eachComment(storeDir, func(c *api.Comment, line []byte) {
		if zt != nil {
			tail := ""
			if i := strings.Index(c.Text, "  needle"); i >= 0 {
				tail = c.Text[i:]
			}
			c.Text = zt.text(tail)
			line, _ = json.Marshal(c)
		}
		if indexLimit > 0 && n >= indexLimit {
			return
		}
		lineBytes += int64(len(line)) + 1
		if err := batch.Index(c.ID, doc(variant, c, line)); err != nil {
			log.Fatal(err)
		}
		n++
		if batch.Size() == batchSize {
			if err := idx.Batch(batch); err != nil {
				log.Fatal(err)
			}
			batch.Reset()
		}
	})
	if batch.Size() > 0 {
		if err := idx.Batch(batch); err != nil {
			log.Fatal(err)
		}
	}
	applied := time.Since(start)
	if err := idx.Close(); err != nil {
		log.Fatal(err)
	}
	closed := time.Since(start)
	fmt.Printf("indexed %d comments (%s text, %s analyzer, batches of %d)\n", n, textKind, variant, batchSize)
	fmt.Printf("  batches applied: %.1f s, %.0f comments/s\n", applied.Seconds(), float64(n)/applied.Seconds())
	fmt.Printf("  closed (persisted, merges done): %.1f s, %.0f comments/s\n", closed.Seconds(), float64(n)/closed.Seconds())
	size := dirSize(indexDir)
	fmt.Printf("  index on disk: %d bytes (%.0f MiB); the comments as JSON lines: %d bytes (%.0f MiB); ratio %.2f\n",
		size, float64(size)/(1<<20), lineBytes, float64(lineBytes)/(1<<20), float64(size)/float64(lineBytes))
	fmt.Printf("  peak resident memory: %.0f MiB\n", procStatus("VmHWM"))
	var ru syscall.Rusage
	syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
	cpu := time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
	fmt.Printf("  CPU time (reading the store included): %.1f s, %.0f µs a comment\n", cpu.Seconds(), float64(cpu.Microseconds())/float64(n))
}

// candidate turns a query node into a Bleve query that matches at least
// the comments the node matches (a superset, to be verified by
// Query.Match), and says whether it matches exactly those.
func candidate(n *query.Node) (bq.Query, bool) {
	switch n.Op {
	case query.OpAtom:
		return atomCandidate(n.Atom)
	case query.OpAnd:
		// Kids that are exact narrow cheaply; when there are some, the
		// others (phrases) are left to Query.Match rather than made
		// Bleve's work on every comment they are in.
		var qs, loose []bq.Query
		exact := true
		for _, k := range n.Kids {
			q, e := candidate(k)
			exact = exact && e
			if _, all := q.(*bq.MatchAllQuery); all {
				continue
			}
			if e {
				qs = append(qs, q)
			} else {
				loose = append(loose, q)
			}
		}
		if len(qs) == 0 {
			qs = loose
		}
		if len(qs) == 0 {
			return bleve.NewMatchAllQuery(), exact
		}
		return bleve.NewConjunctionQuery(qs...), exact
	case query.OpOr:
		var qs []bq.Query
		exact := true
		for _, k := range n.Kids {
			q, e := candidate(k)
			if _, all := q.(*bq.MatchAllQuery); all {
				return q, false
			}
			exact = exact && e
			qs = append(qs, q)
		}
		return bleve.NewDisjunctionQuery(qs...), exact
	case query.OpNot:
		q, e := candidate(n.Kids[0])
		if !e {
			return bleve.NewMatchAllQuery(), false // only an exact set can be taken away
		}
		b := bleve.NewBooleanQuery()
		b.AddMust(bleve.NewMatchAllQuery())
		b.AddMustNot(q)
		return b, true
	}
	panic("unknown op")
}

// qlTokenRE splits a term as the ql analyzer does.
var qlTokenRE = stdregexp.MustCompile(qlWords)

func atomCandidate(a query.Atom) (bq.Query, bool) {
	switch a.Kind {
	case query.From:
		x, y := bleve.NewTermQuery(a.Value), bleve.NewTermQuery(a.Value)
		x.SetField("author")
		y.SetField("author_id")
		return bleve.NewDisjunctionQuery(x, y), true
	case query.Lang:
		x, y := bleve.NewTermQuery(a.Value), bleve.NewPrefixQuery(a.Value+"-")
		x.SetField("lang")
		y.SetField("lang")
		return bleve.NewDisjunctionQuery(x, y), true
	}
	toks := qlTokenRE.FindAllString(strings.ToLower(a.Text()), -1)
	switch {
	case len(toks) == 0:
		return bleve.NewMatchAllQuery(), false
	case len(toks) == 1:
		t := bleve.NewTermQuery(toks[0])
		t.SetField("text")
		// A word of word bytes only is a token exactly when it occurs whole.
		return t, a.Kind == query.Word && toks[0] == a.Value
	}
	return bleve.NewPhraseQuery(toks, "text"), false
}

// direct translates a query node as one would with Bleve's own analysis:
// match and match_phrase queries on the text, terms on the keywords.
func direct(n *query.Node) bq.Query {
	switch n.Op {
	case query.OpAtom:
		a := n.Atom
		switch a.Kind {
		case query.From:
			t := bleve.NewTermQuery(a.Value)
			t.SetField("author")
			return t
		case query.Lang:
			t := bleve.NewTermQuery(a.Value)
			t.SetField("lang")
			return t
		case query.Phrase:
			p := bleve.NewMatchPhraseQuery(a.Value)
			p.SetField("text")
			return p
		}
		m := bleve.NewMatchQuery(a.Text())
		m.SetField("text")
		m.SetOperator(bq.MatchQueryOperatorAnd)
		return m
	case query.OpAnd, query.OpOr:
		var qs []bq.Query
		for _, k := range n.Kids {
			qs = append(qs, direct(k))
		}
		if n.Op == query.OpAnd {
			return bleve.NewConjunctionQuery(qs...)
		}
		return bleve.NewDisjunctionQuery(qs...)
	case query.OpNot:
		b := bleve.NewBooleanQuery()
		b.AddMust(bleve.NewMatchAllQuery())
		b.AddMustNot(direct(n.Kids[0]))
		return b
	}
	panic("unknown op")
}

// maxCandidates bounds the candidates one page verifies, as
// store.DefaultSearchScan bounds a scan.
const maxCandidates = 200_000

// result is one first page.
type result struct {
	ids        []string
	candidates int
	exact      bool
}

// search returns the first page of limit matches, newest first: Bleve's
// candidates sorted by published time, verified by Query.Match.
func search(idx bleve.Index, q *query.Query, limit int, verify bool) result {
	cq, exact := candidate(q.Root())
	r := result{exact: exact}
	var after []string
	for len(r.ids) < limit && r.candidates < maxCandidates {
		req := bleve.NewSearchRequestOptions(cq, limit, 0, false)
		req.SortBy([]string{"-published", "-_id"})
		req.Fields = []string{"src"}
		req.Score = bleve.ScoreNone
		req.SearchAfter = after
		res, err := idx.Search(req)
		if err != nil {
			log.Fatal(err)
		}
		for _, h := range res.Hits {
			r.candidates++
			if verify || !exact {
				var c api.Comment
				src, _ := h.Fields["src"].(string)
				if err := json.Unmarshal([]byte(src), &c); err != nil {
					log.Fatalf("hit %s: %v", h.ID, err)
				}
				if _, ok := q.Match(query.Doc{Text: c.Text, Author: c.Author, AuthorID: c.AuthorID, Lang: c.Lang}); !ok {
					continue
				}
			}
			if len(r.ids) < limit {
				r.ids = append(r.ids, h.ID)
			}
		}
		if len(res.Hits) < limit {
			break
		}
		after = res.Hits[len(res.Hits)-1].Sort
	}
	return r
}

// truth is the first page of each question as the scan gives it: every
// comment evaluated by Query.Match, newest first.
func truth(storeDir string, qs []*query.Query, limit int) [][]string {
	last := make([][]string, len(qs))
	eachComment(storeDir, func(c *api.Comment, _ []byte) {
		for i, q := range qs {
			if _, ok := q.Match(query.Doc{Text: c.Text, Author: c.Author, AuthorID: c.AuthorID, Lang: c.Lang}); ok {
				last[i] = append(last[i], c.ID)
				if len(last[i]) > limit {
					last[i] = last[i][1:]
				}
			}
		}
	})
	for _, l := range last {
		slices.Reverse(l)
	}
	return last
}

// peakHeap returns how far the heap in use rose above its level before
// fn while fn ran.
func peakHeap(fn func()) uint64 {
	runtime.GC()
	var before runtime.MemStats
	runtime.ReadMemStats(&before)
	var peak atomic.Uint64
	peak.Store(before.HeapInuse)
	done, stopped := make(chan struct{}), make(chan struct{})
	go func() {
		defer close(stopped)
		var m runtime.MemStats
		for {
			runtime.ReadMemStats(&m)
			if m.HeapInuse > peak.Load() {
				peak.Store(m.HeapInuse)
			}
			select {
			case <-done:
				return
			case <-time.After(5 * time.Millisecond):
			}
		}
	}()
	fn()
	close(done)
	<-stopped
	return peak.Load() - before.HeapInuse
}

func median(d []time.Duration) time.Duration {
	s := slices.Clone(d)
	slices.Sort(s)
	return s[len(s)/2]
}

func queryMode(storeDir, indexDir string, runs int) {
	parsed := make([]*query.Query, len(questions))
	for i, qq := range questions {
		var err error
		if parsed[i], err = query.Parse(qq.q); err != nil {
			log.Fatal(err)
		}
	}
	t0 := time.Now()
	want := truth(storeDir, parsed, 20)
	fmt.Printf("truth by Query.Match over the store: %.1f s\n", time.Since(t0).Seconds())
	runtime.GC()
	rssBefore := procStatus("VmRSS")
	t0 = time.Now()
	idx, err := bleve.Open(indexDir)
	if err != nil {
		log.Fatal(err)
	}
	defer idx.Close()
	var m runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&m)
	fmt.Printf("open: %.0f ms; heap in use %.0f MiB; resident %.0f MiB (+%.0f MiB)\n",
		float64(time.Since(t0).Microseconds())/1000, float64(m.HeapInuse)/(1<<20), procStatus("VmRSS"), procStatus("VmRSS")-rssBefore)
	for i, qq := range questions {
		var r result
		search(idx, parsed[i], 20, true) // warm up
		times := make([]time.Duration, runs)
		var peak uint64
		for k := range runs {
			peak = max(peak, peakHeap(func() {
				t := time.Now()
				r = search(idx, parsed[i], 20, true)
				times[k] = time.Since(t)
			}))
		}
		status := "same ids as the scan"
		if !slices.Equal(r.ids, want[i]) {
			status = fmt.Sprintf("DIFFERENT: index %v, scan %v", r.ids, want[i])
		}
		fmt.Printf("%-8s %-30q median %8.3f ms (%s); %d matches, %d candidates verified, exact=%v; heap growth %.1f MiB; %s\n",
			qq.name, qq.q, float64(median(times).Microseconds())/1000, fmtTimes(times), len(r.ids), r.candidates, r.exact,
			float64(peak)/(1<<20), status)
	}
	fmt.Printf("resident memory now %.0f MiB, peak %.0f MiB (truth included)\n", procStatus("VmRSS"), procStatus("VmHWM"))
}

func fmtTimes(d []time.Duration) string {
	var s []string
	for _, x := range d {
		s = append(s, fmt.Sprintf("%.3f", float64(x.Microseconds())/1000))
	}
	return strings.Join(s, " · ")
}

func main() {
	mode := flag.String("mode", "query", "index, query, osload, osquery or diff")
	storeDir := flag.String("store", "/tmp/indexbench/store", "the file store BenchmarkSearch filled")
	indexDir := flag.String("index", "/tmp/indexbench/index", "the Bleve index")
	variant := flag.String("analyzer", "ql", "ql (the query language's words) or standard")
	textKind := flag.String("text", "bench", "bench (the stored texts) or zipf (texts drawn from a Zipf vocabulary)")
	batchSize := flag.Int("batch", 5000, "comments per Bleve batch")
	runs := flag.Int("runs", 3, "timed runs per question")
	osURL := flag.String("os", "http://127.0.0.1:9250", "the OpenSearch node")
	osPID := flag.String("ospid", "", "the OpenSearch node's process id (for its CPU time and memory)")
	limit := flag.Int("limit", 0, "index only the first N comments (0: all)")
	noSrc := flag.Bool("nosrc", false, "do not store the comment's JSON in the index")
	unsafe := flag.Bool("unsafe", false, "scorch's unsafe_batch: a batch returns before it is persisted")
	cpuProfile := flag.String("cpuprofile", "", "write a CPU profile here")
	flag.Parse()
	indexLimit, storeSrc, unsafeBatch = *limit, !*noSrc, *unsafe
	if *cpuProfile != "" {
		f, err := os.Create(*cpuProfile)
		if err != nil {
			log.Fatal(err)
		}
		pprof.StartCPUProfile(f)
		defer pprof.StopCPUProfile()
	}
	switch *mode {
	case "index":
		indexMode(*storeDir, *indexDir, *variant, *textKind, *batchSize)
	case "query":
		queryMode(*storeDir, *indexDir, *runs)
	case "osload":
		osLoad(*osURL, *storeDir, *batchSize, *osPID)
	case "osquery":
		osQueryMode(*osURL, *storeDir, *runs, *osPID)
	case "diff":
		diffMode()
	default:
		log.Fatalf("unknown mode %q", *mode)
	}
}
