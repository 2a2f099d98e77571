"""nbtext: a Naive Bayes text and spam classifier, as a command-line tool and a library.

The pipeline, one module per step: read (inputs) -> tokenize / mail -> vectorize (rows: the
sparse matrices) -> naive_bayes (counts) -> model / score -> report, with the model file format
in modelfile and the CLI in cli.

Importing nbtext is cheap; the estimators (which need numpy; scipy's matrices are taken, not
needed) load on first use:

    from nbtext import MultinomialNB, Tokenizer
"""
__version__ = "0.1.0"

_LAZY = {
    "MultinomialNB": "naive_bayes", "BernoulliNB": "naive_bayes", "ComplementNB": "naive_bayes",
    "Tokenizer": "tokenize", "TokenizerSettings": "settings", "ModelSettings": "settings",
    "Model": "model", "Vocabulary": "vectorize", "load": "modelfile", "save": "modelfile",
    "NbtextError": "errors",
}
__all__ = sorted(_LAZY)


def __getattr__(name):
    if name in _LAZY:
        import importlib

        return getattr(importlib.import_module(f"nbtext.{_LAZY[name]}"), name)
    raise AttributeError(f"module 'nbtext' has no attribute {name!r}")
