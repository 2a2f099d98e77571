"""The scikit-learn peer of `make bench`: CountVectorizer + MultinomialNB, as a user would script it.

    python scripts/bench_sklearn.py train CORPUS_DIR MODEL.joblib
    python scripts/bench_sklearn.py predict MODEL.joblib DIR      (id<TAB>label per file)
    python scripts/bench_sklearn.py classify MODEL.joblib FILE    (label<TAB>probability)

A label directory holds one subdirectory per class; every file under it is one document,
read as bytes and decoded as UTF-8 with replacement (scikit-learn's decode_error="replace").
"""
import os
import sys


def files_under(root):
    for dirpath, dirnames, filenames in os.walk(root, followlinks=True):
        dirnames.sort()
        for name in sorted(filenames):
            yield os.path.join(dirpath, name)


def read(path):
    with open(path, "rb") as f:
        return f.read()


def main(argv):
    import joblib

    cmd = argv[1]
    if cmd == "train":
        from sklearn.feature_extraction.text import CountVectorizer
        from sklearn.naive_bayes import MultinomialNB
        from sklearn.pipeline import make_pipeline

        root = argv[2]
        docs, labels = [], []
        for label in sorted(os.listdir(root)):
            for path in files_under(os.path.join(root, label)):
                docs.append(read(path))
                labels.append(label)
        pipe = make_pipeline(CountVectorizer(decode_error="replace"), MultinomialNB())
        pipe.fit(docs, labels)
        joblib.dump(pipe, argv[3])
    elif cmd == "predict":
        pipe = joblib.load(argv[2])
        paths = list(files_under(argv[3]))
        out = sys.stdout
        for start in range(0, len(paths), 1000):
            chunk = paths[start:start + 1000]
            for path, label in zip(chunk, pipe.predict([read(p) for p in chunk])):
                out.write(f"{path}\t{label}\n")
    elif cmd == "classify":
        pipe = joblib.load(argv[2])
        proba = pipe.predict_proba([read(argv[3])])[0]
        best = proba.argmax()
        print(f"{pipe.classes_[best]}\t{proba[best]:.6f}")
    else:
        sys.exit(f"unknown command {cmd!r}")


if __name__ == "__main__":
    main(sys.argv)
