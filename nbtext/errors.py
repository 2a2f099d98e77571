"""The exceptions the library raises. The process edge (nbtext.process) turns them into messages
and exit statuses."""
import re


class NbtextError(Exception):
    """A user error: a bad path, value or file. The message names the culprit."""


class InputError(NbtextError, ValueError):
    """Bad input to an estimator (X, y, sample weights, a parameter's value): a ValueError as
    well, as scikit-learn's tools expect of a bad input."""


class DenseOnlyError(InputError, TypeError):
    """Sparse X given to an estimator that takes dense X alone: a TypeError as well, as
    scikit-learn's own estimators raise it (check_array), and as its 1.6 check of sample
    weights on sparse data takes a dense-only estimator's refusal to be."""


class NotFittedError(InputError, AttributeError):
    """An estimator used before it was fitted (scikit-learn's NotFittedError is both too)."""


class KernelError(NbtextError):
    """The compiled kernel NBTEXT_KERNEL=c asks for cannot run (not built, or stale): the
    installation's fault, which a reader of a model file or dump lets through as it is, not
    the file's (the kernel is first asked for while one is read)."""


class NoDocuments(InputError):
    """Sources that held no document to read (no_documents words it). The command line says
    nothing more of it when an input could not be read (its own error line says why nothing
    came of it)."""


def no_documents(what: str = "", sources=()) -> NoDocuments:
    """The refusal of sources (named, up to LISTED) in which no document was found, for
    ``what`` (training, evaluation, ...)."""
    return NoDocuments(f"{where(sources)}no documents found in the {what + ' ' if what else ''}sources")


class ModelFileError(NbtextError):
    """A model file that is truncated, corrupt, foreign or from a newer version."""


def literal(text: str) -> str:
    """Text for a SettingError's problem that is not a template: its braces doubled."""
    return text.replace("{", "{{").replace("}", "}}")


class SettingError(NbtextError):
    """A bad value of a setting. The message names the library's parameters (``param``, and any
    ``{other}`` in ``problem``); the command line words it with its flags instead (``worded``)."""

    def __init__(self, param: str, value, problem: str):
        self.param, self.value, self.problem = param, value, problem
        super().__init__(self.worded(str))

    def __reduce__(self):
        # (as made, not from args: one raised in a worker process reaches train's parent pickled,
        # and Exception's default would unpickle it as SettingError(message), a TypeError)
        return type(self), (self.param, self.value, self.problem)

    def worded(self, name_of) -> str:
        """The message, with each parameter called name_of(parameter). ``problem`` follows the
        parameter's name, unless it starts with a {parameter} of its own; text from outside
        (a label, a class name) goes in through literal(), so its braces stay braces."""
        template = self.problem if self.problem.startswith("{") else "{%s} %s" % (self.param, self.problem)
        message = re.sub(r"\{\{|\}\}|\{(\w+)\}",
                         lambda m: name_of(m.group(1)) if m.group(1) else m.group(0)[0], template)
        return message + ("" if self.value is None else f", got {self.value}")


# Characters no name (a label, a class, a table's column) may hold: they break TSV rows (tab,
# newline, CR), end strings (NUL), drive a terminal (ESC) or make classes that print alike
# (other C0/C1 controls, DEL, line/paragraph separators, lone surrogates). Names come from
# training files and from model files and dumps, and every one is checked by this rule.
BAD_NAME_CHAR = re.compile("[\x00-\x1f\x7f-\x9f\u2028\u2029\ud800-\udfff]")


def shown(text: str) -> str:
    """Text from a file or a file name as a message can show it: control characters (a
    terminal's escape sequences, tab, newline, NUL; C1 too) written \\xNN, a file name's bytes
    that are not UTF-8 (surrogate escapes) \\xNN as the output rows write them, other invisible
    characters \\uNNNN, so that a hostile name or header cannot drive the terminal or split the
    line."""
    if text.isprintable():
        return text

    def visible(c: str) -> str:
        o = ord(c)
        if c == " " or c.isprintable():
            return c
        return f"\\x{o:02x}" if o < 0x100 else f"\\x{o - 0xdc00:02x}" if 0xdc80 <= o <= 0xdcff else f"\\u{o:04x}"
    return "".join(map(visible, text))


# A line names at most this many things (train's summary its classes, a refusal its sources);
# past it, the first or largest nine and how many more (`info` lists every class). A shell glob
# gives thousands of sources, and a line of thousands of names says nothing.
LISTED = 10


def named(names) -> str:
    """Names (of sources) for a message: all of them up to LISTED, else the first LISTED - 1
    and how many more, each made visible (shown)."""
    names = [shown(str(n)) for n in names]
    if len(names) <= LISTED:
        return ", ".join(names)
    return ", ".join(names[:LISTED - 1]) + f" and {len(names) - (LISTED - 1)} more"


def where(sources) -> str:
    """A refusal's start that names what was read (none: nothing)."""
    return f"{named(sources)}: " if sources else ""
