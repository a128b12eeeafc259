package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"log"
	"net/http"
	"os/exec"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/blackwidow-crawl/blackwidow/api"
	"github.com/blackwidow-crawl/blackwidow/pkg/query"
)

// osIndex is the OpenSearch index the comments go into.
const osIndex = "comments"

func osDo(base, method, path string, body []byte, contentType string) []byte {
	req, err := http.NewRequest(method, base+path, bytes.NewReader(body))
	if err != nil {
		log.Fatal(err)
	}
	if body != nil {
		req.Header.Set("Content-Type", contentType)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		log.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	if resp.StatusCode >= 300 {
		log.Fatalf("%s %s: %s: %s", method, path, resp.Status, b)
	}
	return b
}

func osJSON(base, method, path string, body any) map[string]any {
	var b []byte
	if body != nil {
		b, _ = json.Marshal(body)
	}
	var out map[string]any
	json.Unmarshal(osDo(base, method, path, b, "application/json"), &out)
	return out
}

// osMapping: the query language's words (a pattern tokenizer keeping the
// runs of word characters), lowercased; author, author_id and lang as
// keywords (lowercased by the loader); published time in milliseconds; the
// comment itself kept in _source, not indexed.
func osMapping() map[string]any {
	return map[string]any{
		"settings": map[string]any{
			"number_of_shards": 1, "number_of_replicas": 0, "refresh_interval": "-1",
			"analysis": map[string]any{
				"tokenizer": map[string]any{"qlwords": map[string]any{"type": "pattern", "pattern": qlWords, "group": 0}},
				"analyzer":  map[string]any{"ql": map[string]any{"type": "custom", "tokenizer": "qlwords", "filter": []string{"lowercase"}}},
			},
		},
		"mappings": map[string]any{
			"dynamic": "strict",
			"_source": map[string]any{"includes": []string{"c"}},
			"properties": map[string]any{
				"text":      map[string]any{"type": "text", "analyzer": "ql", "norms": false},
				"author":    map[string]any{"type": "keyword", "doc_values": false},
				"author_id": map[string]any{"type": "keyword", "doc_values": false},
				"lang":      map[string]any{"type": "keyword", "doc_values": false},
				"published": map[string]any{"type": "long"},
				"c":         map[string]any{"type": "object", "enabled": false},
			},
		},
	}
}

func osStoreBytes(base string) (int64, int64) {
	st := osJSON(base, "GET", "/"+osIndex+"/_stats/store,segments", nil)
	all := st["_all"].(map[string]any)["primaries"].(map[string]any)
	size := all["store"].(map[string]any)["size_in_bytes"].(float64)
	segs := all["segments"].(map[string]any)["count"].(float64)
	return int64(size), int64(segs)
}

func osLoad(base, storeDir string, batchSize int, pid string) {
	osJSON(base, "PUT", "/"+osIndex, osMapping())
	var buf bytes.Buffer
	n, inBatch := 0, 0
	var lineBytes int64
	flush := func() {
		if inBatch == 0 {
			return
		}
		b := osDo(base, "POST", "/_bulk", buf.Bytes(), "application/x-ndjson")
		if bytes.Contains(b[:min(len(b), 200)], []byte(`"errors":true`)) {
			log.Fatalf("bulk: %s", b[:min(len(b), 2000)])
		}
		buf.Reset()
		inBatch = 0
	}
	cpu0 := procCPU(pid)
	start := time.Now()
	eachComment(storeDir, func(c *api.Comment, line []byte) {
		if indexLimit > 0 && n >= indexLimit {
			return
		}
		lineBytes += int64(len(line)) + 1
		d := doc("ql", c, line)
		delete(d, "src")
		d["published"] = c.PublishedAt.UnixMilli()
		d["c"] = json.RawMessage(line)
		meta, _ := json.Marshal(map[string]any{"index": map[string]any{"_index": osIndex, "_id": c.ID}})
		buf.Write(meta)
		buf.WriteByte('\n')
		body, _ := json.Marshal(d)
		buf.Write(body)
		buf.WriteByte('\n')
		n++
		inBatch++
		if inBatch == batchSize {
			flush()
		}
	})
	flush()
	bulk := time.Since(start)
	osJSON(base, "POST", "/"+osIndex+"/_refresh", nil)
	osJSON(base, "POST", "/"+osIndex+"/_flush", nil)
	searchable := time.Since(start)
	cpu := procCPU(pid) - cpu0
	fmt.Printf("OpenSearch: indexed %d comments (bulk of %d, 1 shard, 0 replicas, refresh off while loading)\n", n, batchSize)
	fmt.Printf("  bulk requests done: %.1f s, %.0f comments/s\n", bulk.Seconds(), float64(n)/bulk.Seconds())
	fmt.Printf("  refreshed and flushed: %.1f s, %.0f comments/s\n", searchable.Seconds(), float64(n)/searchable.Seconds())
	fmt.Printf("  node CPU time: %.1f s, %.0f µs a comment (loader not included)\n", cpu.Seconds(), float64(cpu.Microseconds())/float64(n))
	size, segs := osStoreBytes(base)
	fmt.Printf("  index on disk: %d bytes (%.0f MiB, %d segments); JSON lines %d bytes; ratio %.2f\n", size, float64(size)/(1<<20), segs, lineBytes, float64(size)/float64(lineBytes))
	for range 60 {
		time.Sleep(5 * time.Second)
		m := osJSON(base, "GET", "/"+osIndex+"/_stats/merge", nil)
		cur := m["_all"].(map[string]any)["primaries"].(map[string]any)["merges"].(map[string]any)["current"].(float64)
		if cur == 0 {
			break
		}
	}
	size, segs = osStoreBytes(base)
	fmt.Printf("  after merges settle: %d bytes (%.0f MiB, %d segments); ratio %.2f\n", size, float64(size)/(1<<20), segs, float64(size)/float64(lineBytes))
	fmt.Printf("  node resident: %.0f MiB\n", procRSS(pid))
}

// procCPU is the CPU time a process has used (utime+stime).
func procCPU(pid string) time.Duration {
	out, err := exec.Command("ps", "-o", "cputimes=", "-p", pid).Output()
	if err != nil {
		return 0
	}
	s, _ := strconv.Atoi(strings.TrimSpace(string(out)))
	return time.Duration(s) * time.Second
}

func procRSS(pid string) float64 {
	out, _ := exec.Command("ps", "-o", "rss=", "-p", pid).Output()
	kb, _ := strconv.ParseFloat(strings.TrimSpace(string(out)), 64)
	return kb / 1024
}

// osCandidate is candidate() in OpenSearch's query DSL.
func osCandidate(n *query.Node) (map[string]any, bool) {
	all := map[string]any{"match_all": map[string]any{}}
	isAll := func(q map[string]any) bool { _, ok := q["match_all"]; return ok }
	switch n.Op {
	case query.OpAtom:
		a := n.Atom
		switch a.Kind {
		case query.From:
			return map[string]any{"bool": map[string]any{"should": []any{
				map[string]any{"term": map[string]any{"author": a.Value}},
				map[string]any{"term": map[string]any{"author_id": a.Value}}}, "minimum_should_match": 1}}, true
		case query.Lang:
			return map[string]any{"bool": map[string]any{"should": []any{
				map[string]any{"term": map[string]any{"lang": a.Value}},
				map[string]any{"prefix": map[string]any{"lang": a.Value + "-"}}}, "minimum_should_match": 1}}, true
		}
		toks := qlTokenRE.FindAllString(strings.ToLower(a.Text()), -1)
		switch {
		case len(toks) == 0:
			return all, false
		case len(toks) == 1:
			return map[string]any{"term": map[string]any{"text": toks[0]}}, a.Kind == query.Word && toks[0] == a.Value
		}
		return map[string]any{"match_phrase": map[string]any{"text": strings.Join(toks, " ")}}, false
	case query.OpAnd:
		var qs []any
		exact := true
		for _, k := range n.Kids {
			q, e := osCandidate(k)
			exact = exact && e
			if !isAll(q) {
				qs = append(qs, q)
			}
		}
		if len(qs) == 0 {
			return all, exact
		}
		return map[string]any{"bool": map[string]any{"filter": qs}}, exact
	case query.OpOr:
		var qs []any
		exact := true
		for _, k := range n.Kids {
			q, e := osCandidate(k)
			if isAll(q) {
				return all, false
			}
			exact = exact && e
			qs = append(qs, q)
		}
		return map[string]any{"bool": map[string]any{"should": qs, "minimum_should_match": 1}}, exact
	case query.OpNot:
		q, e := osCandidate(n.Kids[0])
		if !e {
			return all, false
		}
		return map[string]any{"bool": map[string]any{"must_not": []any{q}}}, true
	}
	panic("unknown op")
}

func osSearch(base string, q *query.Query, limit int) result {
	cq, exact := osCandidate(q.Root())
	r := result{exact: exact}
	var after []any
	for len(r.ids) < limit && r.candidates < maxCandidates {
		body := map[string]any{"query": cq, "size": limit, "sort": []any{map[string]any{"published": "desc"}},
			"track_total_hits": false}
		if after != nil {
			body["search_after"] = after
		}
		res := osJSON(base, "POST", "/"+osIndex+"/_search", body)
		hits := res["hits"].(map[string]any)["hits"].([]any)
		for _, h := range hits {
			hm := h.(map[string]any)
			r.candidates++
			src, _ := json.Marshal(hm["_source"].(map[string]any)["c"])
			var c api.Comment
			if err := json.Unmarshal(src, &c); err != nil {
				log.Fatal(err)
			}
			if _, ok := q.Match(query.Doc{Text: c.Text, Author: c.Author, AuthorID: c.AuthorID, Lang: c.Lang}); ok && len(r.ids) < limit {
				r.ids = append(r.ids, c.ID)
			}
		}
		if len(hits) < limit {
			break
		}
		after = hits[len(hits)-1].(map[string]any)["sort"].([]any)
	}
	return r
}

func osQueryMode(base, storeDir string, runs int, pid string) {
	parsed := make([]*query.Query, len(questions))
	for i, qq := range questions {
		parsed[i], _ = query.Parse(qq.q)
	}
	want := truth(storeDir, parsed, 20)
	for i, qq := range questions {
		var r result
		osSearch(base, parsed[i], 20)
		times := make([]time.Duration, runs)
		for k := range runs {
			t := time.Now()
			r = osSearch(base, parsed[i], 20)
			times[k] = time.Since(t)
		}
		status := "same ids as the scan"
		if !slices.Equal(r.ids, want[i]) {
			status = fmt.Sprintf("DIFFERENT: index %v, scan %v", r.ids, want[i])
		}
		fmt.Printf("%-8s %-30q median %8.3f ms (%s); %d matches, %d candidates, exact=%v; %s\n",
			qq.name, qq.q, float64(median(times).Microseconds())/1000, fmtTimes(times), len(r.ids), r.candidates, r.exact, status)
	}
	jvm := osJSON(base, "GET", "/_nodes/stats/jvm", nil)
	for _, nd := range jvm["nodes"].(map[string]any) {
		mem := nd.(map[string]any)["jvm"].(map[string]any)["mem"].(map[string]any)
		fmt.Printf("node heap used %.0f MiB of %.0f MiB; resident %.0f MiB\n", mem["heap_used_in_bytes"].(float64)/(1<<20),
			mem["heap_max_in_bytes"].(float64)/(1<<20), procRSS(pid))
	}
}
