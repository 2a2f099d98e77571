"""The model file: framing and checksums (container), the vocabulary's coding (vocabfile), a
Model to and from sections (codec), atomic writes and the writers' lock (atomic), and the text
dump of `export`/`import` (dump). Reading a file imports no numpy until it is decoded whole.

The names below load their module on first use: importing one of the modules (train's
store.atomic, for the output's check, before its workers start) does not import the others
(codec, container and vocabfile with json, which train needs only once it has counted)."""
_LAZY = {"locked": "atomic", "save": "atomic", "decode": "codec", "encode": "codec", "load": "codec",
         "FORMAT_VERSION": "container", "ModelFileError": "container", "read_container": "container"}

__all__ = sorted(_LAZY)


def __getattr__(name):
    if name in _LAZY:
        import importlib

        return getattr(importlib.import_module(f"{__name__}.{_LAZY[name]}"), name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
