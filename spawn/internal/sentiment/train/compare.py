#!/usr/bin/env python3
"""Score the labelled sets with the reference VADER (vaderSentiment 3.3.2)
and AFINN (afinn 0.1, its English and emoticon lists), as docs/sentiment.md
compares them with the product's scorer: 3-class accuracy and macro-F1
over the labels a set has.

  pip install vaderSentiment==3.3.2 afinn==0.1 scikit-learn
  python3 compare.py SETS_DIR

VADER labels positive at compound >= 0.05 and negative at <= -0.05, as its
authors advise; AFINN labels by the sign of its sum.
"""
import glob, os, sys
from afinn import Afinn
from sklearn.metrics import accuracy_score, f1_score
from vaderSentiment.vaderSentiment import SentimentIntensityAnalyzer


def main(d):
    va, af = SentimentIntensityAnalyzer(), Afinn(emoticons=True)
    print("%-16s %7s %17s %17s" % ("set", "texts", "VADER acc / F1", "AFINN acc / F1"))
    for path in sorted(glob.glob(os.path.join(d, "*.tsv"))):
        gold, v, a = [], [], []
        for line in open(path, encoding="utf-8"):
            label, text = line.rstrip("\n").split("\t", 1)
            gold.append(label)
            c = va.polarity_scores(text)["compound"]
            v.append("positive" if c >= 0.05 else "negative" if c <= -0.05 else "neutral")
            s = af.score(text)
            a.append("positive" if s > 0 else "negative" if s < 0 else "neutral")
        labels = sorted(set(gold))
        row = []
        for pred in (v, a):
            row.append("%.3f / %.3f" % (accuracy_score(gold, pred), f1_score(gold, pred, labels=labels, average="macro")))
        print("%-16s %7d %17s %17s" % (os.path.basename(path)[:-4], len(gold), row[0], row[1]), flush=True)


if __name__ == "__main__":
    main(sys.argv[1])
