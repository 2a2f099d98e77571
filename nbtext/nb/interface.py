"""scikit-learn's estimator interface, without scikit-learn: parameters, tags, input checks,
labels in y's own values, and ``score``.

nbtext's estimators do not import scikit-learn (it is not a dependency) and still behave as its
classifiers do, so that its tools (``clone``, ``Pipeline``, ``GridSearchCV``, stratified CV,
``check_estimator``) take them: ``get_params``/``set_params`` read the constructor's signature;
``__sklearn_tags__`` returns scikit-learn's own ``Tags`` when scikit-learn is importable (it is
only ever called by scikit-learn) and ``_more_tags`` gives older releases the same as a dict;
bad input raises ``InputError`` (a ``ValueError``) with scikit-learn's wording, which its checks
match on; ``NotFittedError`` is a ``ValueError`` and an ``AttributeError``, as scikit-learn's is.

Labels: ``classes_`` holds y's distinct values, sorted, in y's dtype (integers in, integers out).
The counts underneath name each class by its position, zero-padded so that the names sort as
the classes do (``Labels``).
"""
from __future__ import annotations

import inspect
import sys
import warnings
from dataclasses import dataclass

import numpy as np

from ..errors import DenseOnlyError, InputError, NotFittedError


@dataclass(frozen=True)
class TagValues:
    """What an estimator accepts, from which both kinds of scikit-learn tags are made."""
    sparse: bool = False
    positive_only: bool = False
    categorical: bool = False
    allow_nan: bool = False
    poor_score: bool = False
    text: bool = False  # X: a sequence of documents (str or bytes), not a matrix
    kind: str = "classifier"  # or "transformer"
    skips: tuple = ()  # ((check name, reason), ...): checks this estimator is known to fail


class EstimatorInterface:
    """The parts of scikit-learn's BaseEstimator that its tools use."""

    tag_values = TagValues()

    # -- parameters ----------------------------------------------------------------------
    @classmethod
    def _get_param_names(cls) -> list:
        sig = inspect.signature(cls.__init__)
        return sorted(p.name for p in sig.parameters.values()
                      if p.name != "self" and p.kind not in (p.VAR_POSITIONAL, p.VAR_KEYWORD))

    def get_params(self, deep: bool = True) -> dict:
        out = {}
        for name in self._get_param_names():
            value = getattr(self, name)
            if deep and hasattr(value, "get_params") and not isinstance(value, type):
                out.update((f"{name}__{k}", v) for k, v in value.get_params().items())
            out[name] = value
        return out

    def set_params(self, **params):
        valid = self._get_param_names()
        nested: dict = {}
        for key, value in params.items():
            name, _, sub = key.partition("__")
            if name not in valid:
                raise InputError(f"Invalid parameter {name!r} for estimator {self}. "
                                 f"Valid parameters are: {valid!r}.")
            if sub:
                nested.setdefault(name, {})[sub] = value
            else:
                setattr(self, name, value)
        for name, sub in nested.items():
            getattr(self, name).set_params(**sub)
        return self

    def __repr__(self) -> str:
        sig = inspect.signature(type(self).__init__)
        shown = []
        for name in self._get_param_names():
            default = sig.parameters[name].default
            value = getattr(self, name, default)
            try:
                same = value is default or bool(value == default) and type(value) is type(default)
            except (ValueError, TypeError):  # (an array)
                same = False
            if not same:
                shown.append(f"{name}={value!r}")
        return f"{type(self).__name__}({', '.join(shown)})"

    # -- tags ------------------------------------------------------------------------------
    def __sklearn_tags__(self):
        t = self.tag_values
        try:
            from sklearn.utils import ClassifierTags, InputTags, Tags, TargetTags, TransformerTags
        except ImportError:  # (only scikit-learn asks; without it, the same fields as plain objects)
            from types import SimpleNamespace as ClassifierTags, SimpleNamespace as InputTags  # noqa: N813
            from types import SimpleNamespace as Tags, SimpleNamespace as TargetTags  # noqa: N813
            from types import SimpleNamespace as TransformerTags  # noqa: N813
        classifier = t.kind == "classifier"
        return Tags(estimator_type="classifier" if classifier else None, target_tags=TargetTags(required=classifier),
                    classifier_tags=ClassifierTags(poor_score=t.poor_score) if classifier else None,
                    transformer_tags=None if classifier else TransformerTags(),
                    input_tags=InputTags(sparse=t.sparse, positive_only=t.positive_only, categorical=t.categorical,
                                         allow_nan=t.allow_nan, two_d_array=not t.text, string=t.text))

    def _more_tags(self) -> dict:
        """The tags of scikit-learn releases before 1.6."""
        t = self.tag_values
        types = ["string"] if t.text else ["2darray"] + (["sparse"] if t.sparse else []) + \
            (["categorical"] if t.categorical else [])
        return {"requires_y": t.kind == "classifier", "requires_positive_X": t.positive_only,
                "allow_nan": t.allow_nan, "poor_score": t.poor_score, "X_types": types,
                "_xfail_checks": dict(t.skips)}

    def __sklearn_is_fitted__(self) -> bool:
        return self._fitted()

    def _fitted(self) -> bool:
        raise NotImplementedError

    def _check_fitted(self) -> None:
        if not self._fitted():
            raise not_fitted_error()(f"This {type(self).__name__} instance is not fitted yet. Call 'fit' with "
                                 "appropriate arguments before using this estimator.")


class ClassifierInterface(EstimatorInterface):
    """The parts of scikit-learn's BaseEstimator and ClassifierMixin that its tools use."""

    _estimator_type = "classifier"  # (what is_classifier reads in releases before 1.6)

    # -- scoring ----------------------------------------------------------------------------
    def score(self, X, y, sample_weight=None) -> float:
        """Mean accuracy of predict(X) against y (weighted by ``sample_weight``)."""
        y = check_y(y)
        right = (self.predict(X) == y).astype(np.float64)
        w = check_sample_weight(sample_weight, len(y), zero_ok=True)
        return float(np.average(right, weights=w))


# -- input checks, worded as scikit-learn's ---------------------------------------------------
def _is_sparse(X) -> bool:
    return hasattr(X, "tocsr") and hasattr(X, "nnz")  # (scipy.sparse, without importing it)


def _finite(values: np.ndarray, what: str) -> None:
    if values.dtype.kind in "fc" and values.size and not np.isfinite(values).all():
        if np.isnan(values).any():
            raise InputError(f"Input {what} contains NaN.")
        raise InputError(f"Input {what} contains infinity or a value too large for dtype('float64').")


def _numeric(a: np.ndarray, what: str) -> np.ndarray:
    if a.dtype.kind == "c":
        raise InputError("Complex data not supported\n{}\n".format(a))
    if a.dtype.kind in "OUS":
        a = a.astype(np.float64)  # (a string or an object that is no number: TypeError or ValueError)
    elif a.dtype.kind == "b":
        a = a.astype(np.float64)
    return a


def check_X(X, name: str, *, sparse: bool = False, allow_nan: bool = False, dtype=None):
    """X as scikit-learn's check_array makes it: a 2-d float array (its own float type kept when
    ``dtype`` is None, else cast), or with ``sparse`` a scipy sparse matrix as CSR; refused
    (InputError, scikit-learn's wording) when it is 1-d, empty, complex, not numeric, or holds
    NaN (unless ``allow_nan``) or infinity, and when sparse without ``sparse`` (DenseOnlyError:
    a TypeError too, as check_array's)."""
    if _is_sparse(X):
        if not sparse:
            raise DenseOnlyError(f"Sparse data was passed for {name}, but dense data is required. Use "
                                 "'.toarray()' to convert to a dense numpy array.")
        X = X.tocsr()
        if X.dtype.kind == "c":
            raise InputError("Complex data not supported\n{}\n".format(X))
        if X.dtype != np.float64:
            X = X.astype(np.float64)
        _shape_ok(X.shape, name)
        _finite(X.data, "X")
        return X
    if X is None:
        raise InputError(f"Expected 2D array, got None instead ({name} needs X).")
    a = np.asarray(X)
    a = _numeric(a, "X")
    if a.ndim < 2:
        raise InputError(f"Expected 2D array, got {'scalar' if a.ndim == 0 else '1D'} array instead:\narray={a}.\n"
                         "Reshape your data either using array.reshape(-1, 1) if your data has a single feature "
                         "or array.reshape(1, -1) if it contains a single sample.")
    if a.ndim > 2:
        raise InputError(f"Found array with dim {a.ndim}. {name} expected <= 2.")
    _shape_ok(a.shape, name)
    if dtype is not None:
        a = a.astype(dtype)
    elif a.dtype.kind != "f":
        a = a.astype(np.float64)
    if allow_nan:
        if a.size and np.isinf(a).any():
            raise InputError("Input X contains infinity or a value too large for dtype('float64').")
    else:
        _finite(a, "X")
    return a


def _shape_ok(shape, name: str) -> None:
    if shape[0] < 1:
        raise InputError(f"Found array with 0 sample(s) (shape={shape}) while a minimum of 1 is required by {name}.")
    if shape[1] < 1:
        raise InputError(f"Found array with 0 feature(s) (shape={shape}) while a minimum of 1 is required by {name}.")


def check_non_negative(X, name: str) -> None:
    values = X.data if _is_sparse(X) else X
    if values.size and values.min() < 0:
        raise InputError(f"Negative values in data passed to {name} (input X)")


def column_vector_warning():
    """scikit-learn's DataConversionWarning where scikit-learn is in use (its checks ask for
    that class), else a UserWarning."""
    if "sklearn" not in sys.modules:
        return UserWarning
    from sklearn.exceptions import DataConversionWarning
    return DataConversionWarning


_NOT_FITTED: list = []


def not_fitted_error() -> type:
    """NotFittedError, where scikit-learn is in use also its NotFittedError (its checks ask
    for that class; nbtext never imports it itself)."""
    if "sklearn" not in sys.modules:
        return NotFittedError
    if not _NOT_FITTED:
        from sklearn.exceptions import NotFittedError as Theirs
        _NOT_FITTED.append(type("NotFittedError", (NotFittedError, Theirs), {"__module__": __name__}))
    return _NOT_FITTED[0]


def check_y(y) -> np.ndarray:
    """y as a 1-d array of labels: a column vector is raveled with a warning (as scikit-learn
    does); None, NaN, infinity, several columns and continuous values are refused."""
    if y is None:
        raise InputError("requires y to be passed, but the target y is None")
    y = np.asarray(y)
    if y.ndim == 2 and y.shape[1] == 1:
        warnings.warn("A column-vector y was passed when a 1d array was expected. Please change the shape of y "
                      "to (n_samples, ), for example using ravel().", column_vector_warning(), stacklevel=3)
        y = y.ravel()
    if y.ndim != 1:
        raise InputError(f"y should be a 1d array, got an array of shape {y.shape} instead.")
    if y.dtype.kind == "f":
        _finite(y, "y")
        if y.size and (y != np.round(y)).any():
            raise InputError("Unknown label type: continuous. Maybe you are trying to fit a classifier, which "
                             "expects discrete classes on a regression target with continuous values.")
    elif y.dtype.kind == "c":
        raise InputError("Complex data not supported")
    elif y.dtype.kind == "O":
        kinds = {isinstance(v, str) for v in y.tolist()}
        if len(kinds) > 1:
            raise InputError("Mix of label input types (string and number)")
    return y


def check_lengths(n_X: int, y: np.ndarray) -> None:
    if n_X != len(y):
        raise InputError(f"Found input variables with inconsistent numbers of samples: [{n_X}, {len(y)}]")


def check_sample_weight(sample_weight, n: int, *, negative_ok: bool = False, zero_ok: bool = False,
                        dtype=np.float64):
    """Sample weights as a float array of n, or None; scikit-learn's refusals (wrong shape,
    NaN, negative values, all zero). ``negative_ok``: nbtext's -1, which takes samples out."""
    if sample_weight is None:
        return None
    w = np.asarray(sample_weight)
    if w.ndim == 0:
        w = np.full(n, float(w))
    w = _numeric(w, "sample_weight").astype(dtype)
    if w.ndim != 1:
        raise InputError("Sample weights must be 1D array or scalar")
    if w.shape != (n,):
        raise InputError(f"sample_weight.shape == {w.shape}, expected {(n,)}!")
    _finite(w, "sample_weight")
    if not negative_ok and (w < 0).any():
        raise InputError("Negative values in data passed to `sample_weight`")
    if not zero_ok and n and not w.any():
        raise InputError("Sample weights must contain at least one non-zero number.")
    return w


def _feature_names(X):
    """A DataFrame's column names when they are all strings, else None."""
    columns = getattr(X, "columns", None)
    if columns is None or not hasattr(X, "iloc"):
        return None
    names = np.asarray(columns, dtype=object)
    text = [isinstance(n, str) for n in names.tolist()]
    if any(text) and not all(text):
        raise InputError("Feature names are only supported if all input features have string names, but your "
                         "input has mixed types of names; convert them all to str.")
    return names if names.size and all(text) else None


def check_feature_names(est, X, reset: bool) -> None:
    """Keep X's column names (a DataFrame's) as ``feature_names_in_`` (``reset``), or check
    them against those kept, as scikit-learn does: a warning when only one side has names, a
    refusal when they differ."""
    names = _feature_names(X)
    if reset:
        if names is not None:
            est.feature_names_in_ = names
        else:
            est.__dict__.pop("feature_names_in_", None)
        return
    fitted = est.__dict__.get("feature_names_in_")
    if fitted is None and names is None:
        return
    name = type(est).__name__
    if fitted is None:
        warnings.warn(f"X has feature names, but {name} was fitted without feature names", UserWarning, stacklevel=4)
    elif names is None:
        warnings.warn(f"X does not have valid feature names, but {name} was fitted with feature names",
                      UserWarning, stacklevel=4)
    elif len(fitted) != len(names) or (fitted != names).any():
        message = "The feature names should match those that were passed during fit.\n"
        unseen, missing = sorted(set(names) - set(fitted)), sorted(set(fitted) - set(names))

        def listed(ns):
            return "".join(f"- {n}\n" for n in ns[:5]) + ("- ...\n" if len(ns) > 5 else "")
        if unseen:
            message += "Feature names unseen at fit time:\n" + listed(unseen)
        if missing:
            message += "Feature names seen at fit time, yet now missing:\n" + listed(missing)
        if not unseen and not missing:
            message += "Feature names must be in the same order as they were in fit.\n"
        raise InputError(message)


def check_width(n: int, fitted: int, name: str) -> None:
    if n != fitted:
        raise InputError(f"X has {n} features, but {name} is expecting {fitted} features as input.")


class Labels:
    """The classes of y in y's own values (sorted, as numpy.unique sorts them) and the names the
    counts underneath give them: each class's position, zero-padded, so that they sort alike."""

    def __init__(self, classes):
        classes = np.asarray(classes)
        if classes.ndim != 1:
            classes = classes.ravel()
        self.classes = np.unique(classes)
        width = len(str(max(len(self.classes) - 1, 0)))
        self.names = [str(i).zfill(width) for i in range(len(self.classes))]

    def indices(self, y: np.ndarray) -> np.ndarray:
        """Each label's class index; refused when a label is not one of the classes."""
        i = np.searchsorted(self.classes, y)
        i = np.clip(i, 0, max(len(self.classes) - 1, 0))
        bad = self.classes[i] != y if len(self.classes) else np.ones(len(y), dtype=bool)
        if np.any(bad):
            raise InputError(f"The target label(s) {np.unique(np.asarray(y)[bad])} in y do not exist in the "
                             f"initial classes {self.classes}")
        return i

    def names_of(self, y: np.ndarray) -> list:
        names = self.names
        return [names[i] for i in self.indices(y).tolist()]

    def same(self, classes) -> bool:
        other = np.unique(np.asarray(classes))
        return other.shape == self.classes.shape and bool(np.all(other == self.classes))


def partial_fit_classes(labels: "Labels | None", classes) -> "Labels":
    """The Labels a partial_fit call counts into: made from ``classes`` on the first call, which
    must give them; later calls may repeat the same classes, and nothing else."""
    if labels is None:
        if classes is None:
            raise InputError("classes must be passed on the first call to partial_fit.")
        return Labels(classes)
    if classes is not None and not labels.same(classes):
        raise InputError(f"`classes={np.asarray(classes)!r}` is not the same as on last call to partial_fit, "
                         f"was: {labels.classes!r}")
    return labels
