"""The model file: framing and checksums (container), the vocabulary's coding (vocabfile), a
Model to and from sections (codec), atomic writes and the writers' lock (atomic), and the text
dump of `export`/`import` (dump). Reading a file imports no numpy until it is decoded whole."""
from .atomic import locked, save
from .codec import decode, encode, load
from .container import FORMAT_VERSION, ModelFileError, read_container

__all__ = ["FORMAT_VERSION", "ModelFileError", "decode", "encode", "load", "locked", "read_container", "save"]
