"""The exceptions the library raises. The process edge (nbtext.process) turns them into messages
and exit statuses."""
import re


class NbtextError(Exception):
    """A user error: a bad path, value or file. The message names the culprit."""


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

    def worded(self, name_of) -> str:
        """The message, with each parameter called name_of(parameter). ``problem`` follows the
        parameter's name, unless it starts with a {parameter} of its own; text from outside
        (a label, a class name) goes in through literal(), so its braces stay braces."""
        template = self.problem if self.problem.startswith("{") else "{%s} %s" % (self.param, self.problem)
        message = re.sub(r"\{\{|\}\}|\{(\w+)\}",
                         lambda m: name_of(m.group(1)) if m.group(1) else m.group(0)[0], template)
        return message + ("" if self.value is None else f", got {self.value}")
