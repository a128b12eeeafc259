#!/usr/bin/env python3
"""Learn the sentiment model's weights from the features the Go scorer
sees (train features), choose its settings by leaving one vader set out
at a time, and write data/model.tsv.

  python3 train.py FEATURES_DIR MODEL_OUT [HELD_OUT_DIR]

FEATURES_DIR holds <set>.jsonl for the sets of prepare.py. Settings are
chosen on the mean macro-F1 of the four leave-one-set-out runs over the
vader sets alone; the other sets are never used here. With HELD_OUT_DIR,
the four leave-one-set-out models of the chosen settings are written
there too, as without-<set>.tsv, for the Go evaluation
(BW_SENTIMENT_EVAL, see docs/sentiment.md) to score each vader set with
a model that never saw it.
"""
import json, os, sys
import numpy as np
from scipy.sparse import csr_matrix, hstack
from sklearn.linear_model import LogisticRegression
from sklearn.metrics import accuracy_score, f1_score

TRAIN = ["vader-tweets", "vader-movie", "vader-amazon", "vader-nyt"]
CLASSES = ["negative", "neutral", "positive"]
MIN_COUNT = 2          # a feature seen in fewer training texts is dropped
SETTINGS = [(c, bal) for c in (0.3, 1.0) for bal in (True, False)]
PRUNE = 0.1            # weights below this (all three) are left out of the file


def load(d, name):
    rows = [json.loads(l) for l in open(os.path.join(d, name + ".jsonl"), encoding="utf-8")]
    return [r["f"] or [] for r in rows], np.array([r["v"] for r in rows]), [r["label"] for r in rows]


def matrix(feats, dense, vocab):
    ind, ptr = [], [0]
    for f in feats:
        ind.extend(vocab[x] for x in f if x in vocab)
        ptr.append(len(ind))
    sp = csr_matrix((np.ones(len(ind)), ind, ptr), shape=(len(feats), len(vocab)))
    return hstack([sp, csr_matrix(dense)]).tocsr()


def fit(data, names, c, balanced):
    feats = [f for n in names for f in data[n][0]]
    dense = np.vstack([data[n][1] for n in names])
    y = [l for n in names for l in data[n][2]]
    count = {}
    for f in feats:
        for x in f:
            count[x] = count.get(x, 0) + 1
    vocab = {x: i for i, x in enumerate(sorted(k for k, v in count.items() if v >= MIN_COUNT))}
    m = LogisticRegression(C=c, max_iter=3000, class_weight="balanced" if balanced else None)
    m.fit(matrix(feats, dense, vocab), y)
    assert list(m.classes_) == CLASSES
    return m, vocab


def main(d, out, held_dir=None):
    data = {n: load(d, n) for n in TRAIN}
    best = None
    for c, bal in SETTINGS:
        scores, accs, folds = [], [], {}
        for held in TRAIN:
            m, vocab = fit(data, [n for n in TRAIN if n != held], c, bal)
            folds[held] = (m, vocab)
            f, v, y = data[held]
            p = m.predict(matrix(f, v, vocab))
            scores.append(f1_score(y, p, average="macro"))
            accs.append(accuracy_score(y, p))
        mean = float(np.mean(scores))
        print("C=%g balanced=%s leave-one-out (%s) accuracy %s macro-F1 %s mean macro-F1 %.3f" % (
            c, bal, " ".join(TRAIN), " ".join("%.3f" % a for a in accs), " ".join("%.3f" % s for s in scores), mean), flush=True)
        if best is None or mean > best[0]:
            best = (mean, c, bal, folds)
    _, c, bal, folds = best
    m, vocab = fit(data, TRAIN, c, bal)
    kept = write_model(out, m, vocab, TRAIN, c, bal)
    print("chose C=%g balanced=%s; %d of %d features written to %s" % (c, bal, kept, len(vocab), out))
    if held_dir:
        os.makedirs(held_dir, exist_ok=True)
        for held, (fm, fv) in folds.items():
            write_model(os.path.join(held_dir, "without-%s.tsv" % held), fm, fv, [n for n in TRAIN if n != held], c, bal)


def write_model(out, m, vocab, sets, c, bal):
    w = m.coef_  # classes × (vocab + 4)
    names = sorted(vocab, key=vocab.get)
    kept = 0
    with open(out, "w", encoding="utf-8") as f:
        f.write("# sentiment model: multinomial logistic regression, classes negative neutral positive\n")
        f.write("# trained by spawn/internal/sentiment/train/train.py on %s; C=%g balanced=%s\n" % (" ".join(sets), c, bal))
        f.write("bias\t%s\n" % "\t".join("%.5f" % x for x in m.intercept_))
        for i, n in enumerate(["v:compound", "v:pos", "v:neg", "v:neu"]):
            f.write("%s\t%s\n" % (n, "\t".join("%.5f" % x for x in w[:, len(vocab) + i])))
        for i, n in enumerate(names):
            col = w[:, i]
            if np.max(np.abs(col)) < PRUNE:
                continue
            kept += 1
            f.write("%s\t%s\n" % (n, "\t".join("%.4f" % x for x in col)))
    return kept


if __name__ == "__main__":
    main(*sys.argv[1:4])
