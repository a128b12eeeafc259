// Command gen writes the detector's n-gram table, data/ngrams.bin.gz,
// from the trigram, bigram and unigram models of Lingua
// (github.com/pemistahl/lingua-go, the version go.mod names) for the
// languages the detector knows. Run by go generate in the package.
//
// The file, gzipped, is: the line "bwlangid 1", the number of languages
// and their codes, then for each language and each n-gram length 1 to 3
// the number of n-grams and each n-gram (its UTF-8 length and bytes)
// with its log-probability (a model Lingua lacks has none) (float32, little endian). Numbers are
// unsigned varints; n-grams are sorted, so the file is reproducible.
package main

import (
	"archive/zip"
	"bufio"
	"bytes"
	"compress/gzip"
	"encoding/binary"
	"errors"
	"flag"
	"fmt"
	"io"
	"io/fs"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"

	"github.com/pemistahl/lingua-go/serialization"
	"google.golang.org/protobuf/proto"
)

// codes are the languages detected, as ISO 639-1 codes (Lingua's
// directory names): the thirty most used on the services the product
// reads.
var codes = []string{
	"en", "es", "pt", "fr", "de", "it", "nl", "sv", "da", "nb", "fi", "pl", "cs", "ro", "hu",
	"tr", "ru", "uk", "el", "he", "ar", "fa", "hi", "bn", "ja", "zh", "ko", "th", "vi", "id",
}

var names = map[int]string{1: "unigrams", 2: "bigrams", 3: "trigrams"}

func main() {
	out := flag.String("o", "data/ngrams.bin.gz", "the file to write")
	flag.Parse()
	if err := run(*out); err != nil {
		fmt.Fprintln(os.Stderr, "gen:", err)
		os.Exit(1)
	}
}

func run(out string) error {
	dir, err := exec.Command("go", "list", "-m", "-f", "{{.Dir}}", "github.com/pemistahl/lingua-go").Output()
	if err != nil {
		return fmt.Errorf("locate lingua-go: %w", err)
	}
	models := filepath.Join(strings.TrimSpace(string(dir)), "language-models")
	var buf bytes.Buffer
	w := bufio.NewWriter(&buf)
	w.WriteString("bwlangid 1\n")
	putUvarint(w, uint64(len(codes)))
	for _, c := range codes {
		putString(w, c)
	}
	total := 0
	for _, c := range codes {
		for n := 1; n <= 3; n++ {
			m, err := load(filepath.Join(models, c, names[n]+".pb.bin.zip"))
			if err != nil {
				return err
			}
			keys := make([]string, 0, len(m))
			for k := range m {
				keys = append(keys, k)
			}
			slices.Sort(keys)
			putUvarint(w, uint64(len(keys)))
			for _, k := range keys {
				putString(w, k)
				var b [4]byte
				binary.LittleEndian.PutUint32(b[:], math.Float32bits(float32(math.Log(m[k]))))
				w.Write(b[:])
			}
			total += len(keys)
		}
	}
	if err := w.Flush(); err != nil {
		return err
	}
	var gz bytes.Buffer
	zw, _ := gzip.NewWriterLevel(&gz, gzip.BestCompression)
	zw.Write(buf.Bytes())
	if err := zw.Close(); err != nil {
		return err
	}
	fmt.Printf("%d languages, %d n-grams, %d bytes (%d gzipped)\n", len(codes), total, buf.Len(), gz.Len())
	return os.WriteFile(out, gz.Bytes(), 0o644)
}

// load reads one of Lingua's zipped protobuf models: n-gram → probability.
func load(path string) (map[string]float64, error) {
	zr, err := zip.OpenReader(path)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil // Lingua has no such model for languages with their own script
	}
	if err != nil {
		return nil, fmt.Errorf("open model: %w", err)
	}
	defer zr.Close()
	if len(zr.File) != 1 {
		return nil, fmt.Errorf("model %s: %d files, want 1", path, len(zr.File))
	}
	f, err := zr.File[0].Open()
	if err != nil {
		return nil, fmt.Errorf("open model: %w", err)
	}
	defer f.Close()
	data, err := io.ReadAll(f)
	if err != nil {
		return nil, fmt.Errorf("read model: %w", err)
	}
	var model serialization.SerializableLanguageModel
	if err := proto.Unmarshal(data, &model); err != nil {
		return nil, fmt.Errorf("decode model %s: %w", path, err)
	}
	m := make(map[string]float64, model.TotalNgrams)
	for _, set := range model.NgramSets {
		if set.Probability <= 0 || set.Probability > 1 {
			return nil, fmt.Errorf("model %s: probability %v", path, set.Probability)
		}
		for _, g := range set.Ngrams {
			m[g] = set.Probability
		}
	}
	return m, nil
}

func putUvarint(w *bufio.Writer, v uint64) {
	var b [binary.MaxVarintLen64]byte
	w.Write(b[:binary.PutUvarint(b[:], v)])
}

func putString(w *bufio.Writer, s string) {
	putUvarint(w, uint64(len(s)))
	w.WriteString(s)
}
