"""nbtext: a Naive Bayes text and spam classifier, as a command-line tool and a library.

The layers, each a folder or a module with imports pointing down, are described in
docs/architecture.md: text (tokenizing), read (inputs), features (vocabulary, count rows,
selection), nb (counts, estimators, calibration, decisions), model, store (the model file),
batch (chunked map/reduce: train, score), and the command lines on top.

Importing nbtext is cheap; the estimators (which need numpy; scipy's matrices are taken, not
needed) load on first use:

    from nbtext import MultinomialNB, Tokenizer
    clf = nbtext.TextClassifier().fit(texts, labels)   # text in, labels out (nbtext.pipeline)
"""
__version__ = "0.1.0"

_LAZY = {
    "MultinomialNB": "nb.estimators", "BernoulliNB": "nb.estimators", "ComplementNB": "nb.estimators",
    "Counts": "nb.counts", "Tokenizer": "text.tokenizer", "TokenizerSettings": "settings",
    "ModelSettings": "settings", "FeatureOptions": "settings", "DecisionOptions": "settings",
    "Model": "model", "Vocabulary": "features.vocabulary", "count_rows": "features.counting",
    "train_model": "batch.train", "TableNB": "table.estimators",
    "GaussianNB": "table.estimators", "CategoricalNB": "table.estimators", "TableSettings": "settings",
    "load": "pipeline", "save": "pipeline", "TextClassifier": "pipeline", "TextVectorizer": "pipeline",
    "NbtextError": "errors",
}
__all__ = sorted(_LAZY)


def __getattr__(name):
    if name in _LAZY:
        import importlib

        return getattr(importlib.import_module(f"nbtext.{_LAZY[name]}"), name)
    raise AttributeError(f"module 'nbtext' has no attribute {name!r}")
