"""The exceptions the library raises. Only the CLI turns them into messages and exit codes."""


class NbtextError(Exception):
    """A user error: a bad path, value or file. The message names the culprit."""


class ModelFileError(NbtextError):
    """A model file that is truncated, corrupt, foreign or from a newer version."""
