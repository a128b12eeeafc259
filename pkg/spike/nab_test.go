package spike

import (
	"bufio"
	"compress/gzip"
	"encoding/csv"
	"encoding/json"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"
)

// NAB (the Numenta Anomaly Benchmark, github.com/numenta/NAB, MIT): labeled
// real-world series, scored as NAB's own scorer (nab/sweeper.py) scores
// them under its standard profile. testdata/nab/SOURCES.md lists the files.

const nabDir = "testdata/nab"

// nabCategories are the series these tests score.
var nabCategories = []string{"realKnownCause", "realAWSCloudwatch", "realTraffic", "realTweets"}

// nabCosts is NAB's standard profile (config/profiles.json).
var nabCosts = struct{ tp, fp, fn float64 }{tp: 1, fp: 0.11, fn: 1}

// nabProbationPercent is the start of each file NAB leaves unscored.
const nabProbationPercent = 0.15

type nabWindow struct{ start, end time.Time }

func nabTime(s string) (time.Time, error) {
	for _, layout := range []string{"2006-01-02 15:04:05.000000", "2006-01-02 15:04:05"} {
		if t, err := time.Parse(layout, strings.TrimSpace(s)); err == nil {
			return t, nil
		}
	}
	return time.Time{}, fmt.Errorf("bad NAB time %q", s)
}

func nabWindows(t *testing.T) map[string][]nabWindow {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(nabDir, "combined_windows.json"))
	if err != nil {
		t.Fatal(err)
	}
	var raw map[string][][2]string
	if err := json.Unmarshal(b, &raw); err != nil {
		t.Fatal(err)
	}
	out := map[string][]nabWindow{}
	for file, ws := range raw {
		for _, w := range ws {
			s, err1 := nabTime(w[0])
			e, err2 := nabTime(w[1])
			if err1 != nil || err2 != nil {
				t.Fatalf("%s: %v %v", file, err1, err2)
			}
			out[file] = append(out[file], nabWindow{s, e})
		}
	}
	return out
}

// nabSeries reads a data file ("realTweets/Twitter_volume_GOOG.csv").
func nabSeries(t *testing.T, file string) []Point {
	t.Helper()
	f, err := os.Open(filepath.Join(nabDir, "data", file+".gz"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	zr, err := gzip.NewReader(f)
	if err != nil {
		t.Fatal(err)
	}
	pts, err := ReadCSV(zr)
	if err != nil {
		t.Fatalf("%s: %v", file, err)
	}
	return pts
}

func nabFiles(t *testing.T) []string {
	t.Helper()
	var out []string
	for _, cat := range nabCategories {
		entries, err := os.ReadDir(filepath.Join(nabDir, "data", cat))
		if err != nil {
			t.Fatal(err)
		}
		for _, e := range entries {
			out = append(out, cat+"/"+strings.TrimSuffix(e.Name(), ".gz"))
		}
	}
	return out
}

func scaledSigmoid(x float64) float64 {
	if x > 3 {
		return -1
	}
	return 2/(1+math.Exp(5*x)) - 1
}

// nabScore is NAB's raw score of one file: the detections (one per row)
// against its windows, as nab/sweeper.py's calcSweepScore and
// calcScoreByThreshold compute it.
func nabScore(times []time.Time, detected []bool, windows []nabWindow) (score float64, tp, fp int) {
	n := len(times)
	probation := int(math.Min(math.Floor(nabProbationPercent*float64(n)), nabProbationPercent*5000))
	indexOf := func(t time.Time) int { return slices.IndexFunc(times, t.Equal) }
	maxTP := scaledSigmoid(-1)
	ws := slices.Clone(windows)
	cur, right, width := -1, 0, 0.0
	prevRight, prevWidth := -1, 0.0
	windowScore := map[int]float64{}
	var fpScore float64
	for i, at := range times {
		if len(ws) > 0 && at.Equal(ws[0].start) {
			cur = len(windows) - len(ws)
			right = indexOf(ws[0].end)
			width = float64(right - indexOf(ws[0].start) + 1)
			ws = ws[1:]
		}
		var weighted float64
		if cur >= 0 {
			weighted = scaledSigmoid(-float64(right-i+1)/width) * nabCosts.tp / maxTP
		} else if prevRight < 0 {
			weighted = -1 * nabCosts.fp
		} else {
			weighted = scaledSigmoid(math.Abs(float64(prevRight-i))/(prevWidth-1)) * nabCosts.fp
		}
		if i >= probation {
			if cur >= 0 {
				if _, ok := windowScore[cur]; !ok {
					windowScore[cur] = -nabCosts.fn
				}
				if detected[i] {
					tp++
					windowScore[cur] = math.Max(windowScore[cur], weighted)
				}
			} else if detected[i] {
				fp++
				fpScore += weighted
			}
		}
		if cur >= 0 && at.Equal(windows[cur].end) {
			prevRight, prevWidth = i, width
			cur = -1
		}
	}
	score = fpScore
	for _, s := range windowScore {
		score += s
	}
	return score, tp, fp
}

// nabPublished reads a detector's published per-file standard scores.
func nabPublished(t *testing.T, detector string) map[string]float64 {
	t.Helper()
	f, err := os.Open(filepath.Join(nabDir, "scores", detector+"_standard_scores.csv"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	rows, err := csv.NewReader(bufio.NewReader(f)).ReadAll()
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]float64{}
	for _, r := range rows[1:] {
		v, err := strconv.ParseFloat(r[4], 64)
		if err != nil {
			t.Fatalf("%s: %v", detector, err)
		}
		out[r[2]] = v
	}
	return out
}

// TestNABScorer_ReproducesPublishedScores scores published detectors'
// anomaly scores at their published thresholds and compares with NAB's
// own per-file standard scores.
func TestNABScorer_ReproducesPublishedScores(t *testing.T) {
	b, err := os.ReadFile(filepath.Join(nabDir, "thresholds.json"))
	if err != nil {
		t.Fatal(err)
	}
	var thresholds map[string]map[string]struct{ Threshold float64 }
	if err := json.Unmarshal(b, &thresholds); err != nil {
		t.Fatal(err)
	}
	windows := nabWindows(t)
	checked := 0
	for _, det := range []string{"numenta", "twitterADVec", "windowedGaussian"} {
		published := nabPublished(t, det)
		threshold := thresholds[det]["standard"].Threshold
		for _, file := range []string{"realKnownCause/nyc_taxi.csv", "realTweets/Twitter_volume_GOOG.csv", "realAWSCloudwatch/ec2_cpu_utilization_53ea38.csv"} {
			path := filepath.Join(nabDir, "results", det, filepath.Dir(file), det+"_"+filepath.Base(file)+".gz")
			f, err := os.Open(path)
			if err != nil {
				t.Fatal(err)
			}
			zr, _ := gzip.NewReader(f)
			rows, err := csv.NewReader(zr).ReadAll()
			f.Close()
			if err != nil {
				t.Fatal(err)
			}
			var times []time.Time
			var detected []bool
			for _, r := range rows[1:] {
				at, err := nabTime(r[0])
				if err != nil {
					t.Fatal(err)
				}
				s, _ := strconv.ParseFloat(r[1], 64)
				times = append(times, at)
				detected = append(detected, s >= threshold)
			}
			got, _, _ := nabScore(times, detected, windows[file])
			if want := published[file]; math.Abs(got-want) > 1e-6 {
				t.Errorf("%s on %s: score %.9f, NAB published %.9f", det, file, got, want)
			}
			checked++
		}
	}
	t.Logf("%d published per-file scores reproduced", checked)
}

// nabRun scores one detector configuration over the files: the raw score
// per file.
func nabRun(t *testing.T, cfg Config, files []string, windows map[string][]nabWindow) (map[string]float64, int, int) {
	out := map[string]float64{}
	var tps, fps int
	for _, file := range files {
		pts := nabSeries(t, file)
		alerts, err := Run(cfg, pts)
		if err != nil {
			t.Fatal(err)
		}
		fired := map[time.Time]bool{}
		for _, a := range alerts {
			fired[a.At] = true
		}
		times := make([]time.Time, len(pts))
		detected := make([]bool, len(pts))
		for i, p := range pts {
			times[i], detected[i] = p.At, fired[p.At]
		}
		s, tp, fp := nabScore(times, detected, windows[file])
		out[file] = s
		tps += tp
		fps += fp
	}
	return out, tps, fps
}

// normalized is NAB's final score over files: 100 (raw − null) / (perfect
// − null), with the null detector's raw score −fn per window and the
// perfect one +tp per window.
func normalized(raw map[string]float64, files []string, windows map[string][]nabWindow) float64 {
	var sum float64
	var n int
	for _, f := range files {
		sum += raw[f]
		n += len(windows[f])
	}
	null, perfect := -nabCosts.fn*float64(n), nabCosts.tp*float64(n)
	return 100 * (sum - null) / (perfect - null)
}

// TestNAB_SpikeDetectorAgainstPublishedDetectors scores the detector over
// the real series of four NAB categories, beside NAB's published
// detectors on the same files. go test -v -run NAB ./pkg/spike/ prints the
// table of docs/benchmarks.md (BW_NAB=1).
func TestNAB_SpikeDetectorAgainstPublishedDetectors(t *testing.T) {
	if os.Getenv("BW_NAB") == "" {
		t.Skip("scores 41 series six times (half a minute, ten under -race): BW_NAB=1 runs it")
	}
	windows := nabWindows(t)
	all := nabFiles(t)
	groups := [][2]string{{"all four", ""}}
	for _, c := range nabCategories {
		groups = append(groups, [2]string{c, c})
	}
	filesOf := func(prefix string) []string {
		var out []string
		for _, f := range all {
			if strings.HasPrefix(f, prefix) {
				out = append(out, f)
			}
		}
		return out
	}
	type row struct {
		name   string
		scores []float64
	}
	var rows []row
	for _, sens := range Sensitivities {
		for _, variant := range []struct {
			name string
			cfg  Config
		}{
			{"spike " + sens, Config{Sensitivity: sens}},
			{"spike " + sens + ", count guards off", Config{Sensitivity: sens, MinVolume: -1, MinDispersion: -1}},
		} {
			raw, tp, fp := nabRun(t, variant.cfg, all, windows)
			r := row{name: fmt.Sprintf("%s (TP rows %d, FP rows %d)", variant.name, tp, fp)}
			for _, g := range groups {
				r.scores = append(r.scores, normalized(raw, filesOf(g[1]), windows))
			}
			rows = append(rows, r)
		}
	}
	// Medium, as a rule has it by default, on the series closest to what
	// the hub counts: tweets per five minutes.
	ours := rows[2].scores[len(groups)-1]
	for _, det := range []string{"ARTime", "numenta", "contextOSE", "htmjava", "numentaTM", "earthgeckoSkyline", "knncad", "relativeEntropy",
		"randomCutForest", "twitterADVec", "windowedGaussian", "skyline", "bayesChangePt", "expose", "random", "null"} {
		raw := nabPublished(t, det)
		r := row{name: det}
		for _, g := range groups {
			r.scores = append(r.scores, normalized(raw, filesOf(g[1]), windows))
		}
		rows = append(rows, r)
		if last := r.scores[len(groups)-1]; (det == "random" || det == "null" || det == "skyline") && ours <= last {
			t.Errorf("on realTweets the spike detector (medium) scores %.1f, not above NAB's %s detector (%.1f)", ours, det, last)
		}
	}
	var b strings.Builder
	fmt.Fprintf(&b, "\n| detector | %s |\n|---|%s\n", strings.Join(func() []string {
		var h []string
		for _, g := range groups {
			h = append(h, fmt.Sprintf("%s (%d files)", g[0], len(filesOf(g[1]))))
		}
		return h
	}(), " | "), strings.Repeat("---:|", len(groups)))
	for _, r := range rows {
		cells := make([]string, len(r.scores))
		for i, s := range r.scores {
			cells[i] = fmt.Sprintf("%.1f", s)
		}
		fmt.Fprintf(&b, "| %s | %s |\n", r.name, strings.Join(cells, " | "))
	}
	t.Log(b.String())
}
