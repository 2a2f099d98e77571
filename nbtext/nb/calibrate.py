"""Honest probabilities and decision thresholds, fitted on internal cross-validation folds.

Naive Bayes posteriors are over-confident: independence is assumed, so evidence that comes in
correlated groups (every word of a newsletter footer) is counted many times, and the more words
a document has, the more sure it looks. The calibration map (fit_calibration) divides the joint
log-likelihood by a temperature times a power of the document's length, softens the largest
margins and mixes in a floor, each fitted by the log-loss of out-of-fold predictions; it never
changes which class scores highest, only how sure it is. Why this map and not a plain
temperature fitted by Brier score: docs/calibration.md (scripts/calibration_study.py): on all
three development corpora the plain temperature prints P >= 0.99999 for wrong documents.
"""
from __future__ import annotations

import numpy as np

from ..errors import SettingError, literal
from ..features.rows import Rows, distinct
from ..settings import DecisionOptions
from .counts import Counts
from .decision import MAX_SCALE, MIN_SCALE
from .estimators import log_posteriors, logsumexp_rows, make_estimator


def stratified_folds(y: np.ndarray, k: int, seed: int) -> np.ndarray:
    """Fold number per document: each class shuffled (seeded) and dealt round-robin."""
    rng = np.random.default_rng(seed)
    folds = np.empty(len(y), dtype=int)
    offset = 0
    for c in distinct(y):
        idx = np.flatnonzero(y == c)
        rng.shuffle(idx)
        folds[idx] = (np.arange(len(idx)) + offset) % k
        offset += len(idx)
    return folds


def can_split(y: np.ndarray, k: int) -> bool:
    """Every class has at least k documents, so every fold's training part has them all."""
    _, counts = np.unique(y, return_counts=True)
    return len(counts) >= 2 and counts.min() >= k


def check_folds(y: np.ndarray, k: int, what: str = "documents") -> None:
    """Refuse a k-fold split that would leave a fold's training part without some class."""
    if not can_split(y, k):
        classes, counts = np.unique(y, return_counts=True)
        few = ", ".join(f"{c}: {n}" for c, n in zip(classes, counts) if n < k) or "only one class"
        raise SettingError("folds", None, f"{k} needs at least {k} {what} of each of two or more classes "
                           f"({literal(few)})")


def out_of_fold_jll(X, y: np.ndarray, classes: list[str], settings, k: int = 5, seed: int = 0,
                    full=None, unseen: str = "keep"):
    """Joint log-likelihoods of every document from a model that did not see it.

    Each fold's model is ``full`` with the fold's counts taken out again (sample_weight -1):
    ``full`` is an estimator holding X's counts (train passes its model when X is every
    document it learned, so they are not counted twice), fitted here on X by default. Only a
    fold's rows are made float64 at a time. Taking folds out of a model of a larger corpus
    would leave each document's duplicates outside the sample in its own fold's model, so a
    sample is calibrated against itself alone.

    ``unseen`` says what becomes of a fold's tokens that its model never saw: "keep" scores
    them as zero counts, "drop" leaves them out as scoring new mail does, "both" returns the
    pair (kept, dropped) from one pass. Kept, they favour the class with fewer tokens in all
    (alpha / (N_c + alpha V) is larger for smaller N_c): ham full of rare words (newsletters)
    scores P(spam) = 1 out of fold, so --max-fpr, which must foresee how new ham scores, would
    refuse low rates or choose P = 1.000000 and miss much of the spam; dropped, it chooses a
    threshold that calls no held-out ham spam. The temperature is still fitted to the kept
    scores, because that measures better (5-fold `nbtext cv` log-loss 0.072 against 0.083 on
    spamassassin-2002: docs/bench.md). Dropping is only right when each fold's model is the
    whole model less the fold: a sample's fold models know few of the whole corpus's tokens, and
    a token new to them is more like a rare one than an unknown one (dropped, a small sample's
    temperature comes out far too low)."""
    return out_of_fold_jlls(X, y, classes, [(settings, full)], k, seed, unseen)[0]


def out_of_fold_jlls(X, y: np.ndarray, classes: list[str], candidates: list, k: int = 5, seed: int = 0,
                     unseen: str = "keep", mapper=map) -> list:
    """out_of_fold_jll of each (settings, full) candidate, on the same folds, each fold's rows
    and columns made once for all of them (and its counts taken out once for the variants
    that count a document alike: estimators._taken): auto's candidates, scored in one pass.

    ``mapper(fn, folds)`` gives fn(fold) for each fold number, in order: ``map`` by default,
    one fold after another here; train passes one that runs folds in worker processes forked
    from this one (nbtext.batch.train), which see X and the candidates' counts as they are when
    it is called and send back only each fold's scores (a fold's rows: its documents x classes
    per candidate). Each fold's numbers are the same whichever process makes them."""
    if unseen not in ("keep", "drop", "both"):
        raise ValueError(f"unseen must be keep, drop or both, not {unseen!r}")
    X = Rows.of(X)
    folds = stratified_folds(y, k, seed)
    fulls = []
    fitted: dict = {}  # the counts of X fitted for the candidates that count a document alike
    for settings, full in candidates:
        if full is None:
            full = make_estimator(settings, Counts(classes, X.shape[1]))
            if full.same_features in fitted:  # (one copy of X's counts for them all, not one
                full = make_estimator(settings, fitted[full.same_features])  # a candidate)
            else:
                if not full.add_whole(X, y):  # (the kernel, for a sample's 16-bit counts: in place)
                    for f in range(k):  # (at each fold's own columns: estimators.add_at)
                        Xf, cols = X.own_columns(folds == f)
                        full.add_at(Xf, y[folds == f], cols)
                        del Xf
                if full.same_features:
                    fitted[full.same_features] = full.counts_
        fulls.append(full)

    def fold_scores(f: int) -> list:
        """Per candidate, (kept, dropped) scores of fold f's documents (None where not asked)."""
        test = folds == f
        yf = y[test]
        # The fold's model at the fold's own columns (what scoring it reads): its whole counts
        # and weights would sit on train's peak memory, for the same numbers.
        Xf, cols = X.own_columns(test)
        memo: dict = {}
        scores = []
        for full in fulls:
            linear, seen = full.fold_linear(Xf, yf, cols, memo)
            # (seen: taking out transformed counts can leave rounding dust where there should be zeros)
            scores.append((linear.jll(Xf) if unseen != "drop" else None,
                           linear.jll(Xf.with_data(Xf.data * seen[Xf.indices])) if unseen != "keep" else None))
            del linear
        return scores

    outs = [(np.zeros((X.shape[0], len(classes))) if unseen != "drop" else None,
             np.zeros((X.shape[0], len(classes))) if unseen != "keep" else None) for _ in fulls]
    scored = mapper(fold_scores, range(k))
    for f, scores in zip(range(k), scored):
        test = folds == f
        for (kept, dropped), (kept_f, dropped_f) in zip(outs, scores):
            if kept is not None:
                kept[test] = kept_f
            if dropped is not None:
                dropped[test] = dropped_f
    return [(kept, dropped) if unseen == "both" else kept if unseen == "keep" else dropped
            for kept, dropped in outs]


LENGTH_POWERS = (0.0, 0.25, 0.5, 0.75, 1.0)


def lengths_of(X) -> np.ndarray:
    """Each document's length as the calibration map reads it: its known tokens' occurrences."""
    X = Rows.of(X)
    # (summed in float64: a sample's 16-bit counts summed in 16 bits would wrap past 65,535
    # tokens; converted as they are added: a float64 copy of the whole sample is new pages on
    # train's calibration, for nothing the sums need)
    return X.row_sums(dtype=np.float64)


def scales(temperature: float, length_power: float, lengths: np.ndarray) -> np.ndarray:
    """What the map divides each document's jll by: T * length ** b, and 1 for a document with
    no known tokens (its jll is the bias alone: nbtext.nb.decision.calibrated says why)."""
    lengths = np.asarray(lengths, dtype=np.float64)
    return np.where(lengths > 0, temperature * np.maximum(lengths, 1.0) ** length_power, 1.0)


def calibrated_log(decision, jll: np.ndarray, lengths: np.ndarray) -> np.ndarray:
    """Log-posteriors of many documents through the decision's calibration map: the same map as
    nbtext.nb.decision.calibrated (one document, pure Python), with numpy."""
    z = jll / scales(decision.temperature, decision.length_power, lengths)[:, None]
    g = z - z.max(axis=1, keepdims=True)
    if decision.soft:
        g = -decision.soft * np.arcsinh(-g / decision.soft)
    logp = g - logsumexp_rows(g)[:, None]
    if decision.floor:
        logp = np.logaddexp(np.log1p(-decision.floor) + logp, np.log(decision.floor / jll.shape[1]))
    return logp


def brier_of(logp: np.ndarray, t_idx: np.ndarray) -> float:
    """Mean over documents of the squared distance between the probabilities and the truth."""
    p = np.exp(logp)
    p[np.arange(len(p)), t_idx] -= 1.0
    return float(np.square(p).sum(axis=1).mean())


def picked(a: np.ndarray, t_idx: np.ndarray) -> np.ndarray:
    """Each row's entry at its true class (t_idx), as a[np.arange(len(a)), t_idx] gives it: two
    classes by np.where (faster than indexing by two arrays, and it runs hundreds of times a
    fit)."""
    if a.ndim == 2 and a.shape[1] == 2:
        return np.where(t_idx == 1, a[:, 1], a[:, 0])
    return a[np.arange(len(a)), t_idx]


def log_loss_of(logp: np.ndarray, t_idx: np.ndarray) -> float:
    return float(-picked(logp, t_idx).mean())


def log_loss_at(jll: np.ndarray, t_idx: np.ndarray, temperature: float) -> float:
    z = jll / temperature
    return float((logsumexp_rows(z) - picked(z, t_idx)).mean())


def brier_at(jll: np.ndarray, t_idx: np.ndarray, temperature: float) -> float:
    return brier_of(log_posteriors(jll, temperature), t_idx)


def median(a: np.ndarray) -> float:
    """np.median of a 1-d array, to the same bits (the middle value, or the mean of the two
    middle ones, which np.median takes as (x + y) / 2), without the import of numpy.ma that
    np.median makes (numpy 2.4 checks for a masked array), which would sit on train's
    calibration."""
    a = np.asarray(a, dtype=np.float64).ravel()
    n = len(a)
    if not n or np.isnan(a).any():
        return float("nan")
    k = n // 2
    if n % 2:
        return float(np.partition(a, k)[k])
    part = np.partition(a, [k - 1, k])
    return float((part[k - 1] + part[k]) / 2)


def fit_temperature(jll: np.ndarray, t_idx: np.ndarray, objective=log_loss_at) -> float:
    """The T minimizing the objective over out-of-fold scores (golden-section search on log T).

    The search spans 1e-4 to 1e2 times the typical spread of a document's scores, so that it
    fits multinomial log-likelihoods (spreads in the hundreds) and Complement NB's normalized
    weights (spreads in the thousandths) alike."""
    spread = median(np.ptp(jll, axis=1)) if jll.size else 1.0
    spread = float(np.clip(spread, 1e4 * MIN_SCALE, 1e-2 * MAX_SCALE)) if np.isfinite(spread) and spread > 0 else 1.0
    log_t = golden_section(lambda lt: objective(jll, t_idx, float(np.exp(lt))),
                           np.log(1e-4 * spread), np.log(1e2 * spread), xtol=1e-4)
    return float(np.exp(log_t))


def fit_calibration(jll: np.ndarray, lengths: np.ndarray, t_idx: np.ndarray) -> dict:
    """The calibration map's parameters (nbtext.nb.decision.Decision), fitted by out-of-fold
    log-loss, one after another:

    1. temperature and length_power: z = jll / (T * length ** b), b the best of LENGTH_POWERS.
       Naive Bayes adds a term per token, so its margins grow with a document's length while
       its reliability does not; scaled by length, long documents stop being certain of
       everything, and the log-loss needs no huge T to pay for their few errors (a plain
       temperature does, and so is fitted by Brier score: docs/calibration.md).
    2. soft: each class's gap below the best grows logarithmically past ``soft``
       (-C asinh(-g / C)): the largest margins are the least honest, and a strictly increasing
       map keeps their order instead of printing them all as 1.000000.
    3. floor: the posteriors are mixed with the uniform, (1 - floor) p + floor / K, the share of
       documents whose label their words do not tell (mislabelled, or unlike their class):
       what bounds the printed probability by the errors made out of fold.
    Each step keeps its parameter off (b = 0, soft = 0, floor = 0) unless it lowers the loss."""
    lengths = np.asarray(lengths, dtype=np.float64)
    some = lengths > 0  # (a document without known tokens is not scaled: it says nothing of T or b)
    best = None
    for b in LENGTH_POWERS:
        base = jll[some] / (np.maximum(lengths[some], 1.0) ** b)[:, None]
        t = fit_temperature(base, t_idx[some]) if some.any() else 1.0
        loss = log_loss_at(base, t_idx[some], t) if some.any() else 0.0
        if best is None or loss < best[0] - 1e-12:
            best = (loss, t, b)
    loss, t, b = best
    params = dict(temperature=t, length_power=b, soft=0.0, floor=0.0)
    z = jll / scales(t, b, lengths)[:, None]
    if not some.all():
        loss = log_loss_of(log_posteriors(z), t_idx)
    g = z - z.max(axis=1, keepdims=True)

    def soft_loss(c):
        return log_loss_of(log_posteriors(-c * np.arcsinh(-g / c)), t_idx)
    c = float(np.exp(golden_section(lambda lc: soft_loss(np.exp(lc)), np.log(0.1), np.log(1e3), xtol=1e-4)))
    softened = soft_loss(c)
    if softened < loss - 1e-12:
        params["soft"], loss, g = c, softened, -c * np.arcsinh(-g / c)
    k = jll.shape[1]
    true = picked(log_posteriors(g), t_idx)  # (the loss reads each document's true class alone)

    def floor_loss(e):
        return float(-np.logaddexp(np.log1p(-e) + true, np.log(e / k)).mean())  # (log_loss_of: the same bits)
    e = float(np.exp(golden_section(lambda le: floor_loss(np.exp(le)), np.log(1e-9), np.log(0.5), xtol=1e-4)))
    if floor_loss(e) < loss - 1e-12:
        params["floor"] = e
    return params


def golden_section(f, lo: float, hi: float, xtol: float) -> float:
    """The x in [lo, hi] minimizing a unimodal f, to within xtol: golden-section search
    (Kiefer 1953), one evaluation per step. Our own because scipy.optimize, for this one
    call, would add its import's time and memory to train."""
    shrink = (np.sqrt(5.0) - 1.0) / 2.0
    a, b = float(lo), float(hi)
    c, d = b - shrink * (b - a), a + shrink * (b - a)
    fc, fd = f(c), f(d)
    while b - a > xtol:
        if fc <= fd:
            b, d, fd = d, c, fc
            c = b - shrink * (b - a)
            fc = f(c)
        else:
            a, c, fc = c, d, fd
            d = a + shrink * (b - a)
            fd = f(d)
    return (a + b) / 2.0


def threshold_for_fpr(p_pos: np.ndarray, negative: np.ndarray, rate: float, hint: str = "") -> float:
    """The lowest threshold on P(positive) at which at most ``rate`` of the negatives
    (out of fold) would be called positive; ``hint`` ends the refusal when there is none."""
    DecisionOptions(calibrate=False, max_fpr=rate)  # (checks the rate)
    neg = np.sort(p_pos[negative])[::-1]
    if len(neg) == 0:
        raise SettingError("max_fpr", None, "needs documents of the negative class")
    allowed = int(np.floor(rate * len(neg)))
    if allowed >= len(neg):
        return 0.0
    if neg[allowed] >= 1.0:
        # Those negatives are certain positives out of fold: only a threshold that calls
        # nothing positive would keep them out, and that is no filter.
        sure = int((neg >= 1.0).sum())
        raise SettingError("max_fpr", None, f"{rate} cannot be met: {sure} of the {len(neg)} negative-class "
                           f"documents score P(positive) = 1 in internal cross-validation{hint}")
    # Strictly above the (allowed+1)-th highest negative score: at most `allowed` are above.
    return float(np.nextafter(neg[allowed], np.inf))
