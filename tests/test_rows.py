"""nbtext.features.rows.Rows against scipy.sparse, operation by operation, on random matrices."""
import numpy as np
import pytest
import scipy.sparse as sp
from hypothesis import given, settings, strategies as st

from conftest import implementation
from nbtext.features.rows import Rows, distinct


@st.composite
def matrices(draw, max_rows=8, max_cols=9):
    """A small count matrix with empty rows and columns, some explicit zeros among them."""
    n = draw(st.integers(0, max_rows))
    m = draw(st.integers(1, max_cols))
    cells = draw(st.lists(st.integers(0, 4), min_size=n * m, max_size=n * m))
    return np.asarray(cells, dtype=np.float64).reshape(n, m)


def csr(dense):
    return sp.csr_matrix(dense)


@pytest.mark.slow
@settings(max_examples=100, deadline=None)
@given(matrices(), st.data())
def test_rows_do_what_scipy_does(dense, data):
    X, R = csr(dense), Rows.of(csr(dense))
    n, m = dense.shape
    assert R.shape == X.shape and np.array_equal(R.toarray(), dense)
    assert np.array_equal(Rows.of(dense).toarray(), dense)  # from a dense array, without scipy
    assert np.array_equal(R.tocsr().toarray(), dense)

    mask = np.asarray(data.draw(st.lists(st.booleans(), min_size=n, max_size=n)), dtype=bool)
    ids = np.asarray(data.draw(st.lists(st.integers(0, max(n - 1, 0)), max_size=6 if n else 0)), dtype=np.int64)
    assert np.array_equal(R[mask].toarray(), dense[mask])
    assert np.array_equal(R[ids].toarray(), dense[ids])

    keep = np.flatnonzero(data.draw(st.lists(st.booleans(), min_size=m, max_size=m)))
    kept = R.columns(keep)
    assert np.array_equal(kept.toarray(), dense[:, keep])
    for a in (kept.data, kept.indices):  # (arrays of their own length, not the start of longer ones)
        assert a.base is None or a.base.size == a.size

    assert np.array_equal(R.row_sums(), np.asarray(X.sum(axis=1)).ravel())
    W = np.asarray(data.draw(st.lists(st.floats(-5, 5), min_size=2 * m, max_size=2 * m))).reshape(m, 2)
    assert np.allclose(R @ W, X @ W, rtol=1e-12, atol=1e-12)
    assert np.allclose(R @ W[:, 0], X @ W[:, 0], rtol=1e-12, atol=1e-12)

    k = 3
    group = np.asarray(data.draw(st.lists(st.integers(0, k - 1), min_size=n, max_size=n)), dtype=np.int64)
    w = np.asarray(data.draw(st.lists(st.sampled_from([-1.0, 1.0, 2.0, 0.5]), min_size=n, max_size=n)))
    Y = np.zeros((n, k))
    Y[np.arange(n), group] = w
    assert np.array_equal(R.column_sums_by_row_group(group, k, w), (X.T @ Y).T)  # the same sums, exactly

    scale = np.asarray(data.draw(st.lists(st.floats(0, 3), min_size=n, max_size=n)))
    assert np.array_equal(R.scaled_rows(scale).toarray(), (sp.diags(scale) @ X).toarray())


@pytest.mark.slow
@settings(max_examples=200, deadline=None)
@given(matrices(), st.data())
def test_moved_columns_add_up_sorted_and_once(dense, data):
    """Two local columns can land on one shared id (tokens whose 64-bit keys collide), and some
    are dropped (-1): entries on one column add up, each row's columns come out sorted, once."""
    n, m = dense.shape
    width = data.draw(st.integers(1, 6))
    mapping = np.asarray(data.draw(st.lists(st.integers(-1, width - 1), min_size=m, max_size=m)), dtype=np.int64)
    R = Rows.of(csr(dense)).moved(mapping, width)
    want = np.zeros((n, width))
    for j, to in enumerate(mapping):
        if to >= 0:
            want[:, to] += dense[:, j]
    assert R.shape == (n, width) and np.array_equal(R.toarray(), want)
    for i in range(n):
        cols = R.indices[R.indptr[i]:R.indptr[i + 1]]
        assert (np.diff(cols) > 0).all()


@settings(max_examples=100, deadline=None)
@given(st.lists(matrices(max_cols=5), min_size=1, max_size=4))
def test_stack_is_vstack(parts):
    width = max(p.shape[1] for p in parts)
    parts = [np.pad(p, ((0, 0), (0, width - p.shape[1]))) for p in parts]
    R = Rows.stack([Rows.of(csr(p)) for p in parts], width)
    assert np.array_equal(R.toarray(), np.vstack(parts))


def test_eliminate_zeros_drops_stored_zeros_only():
    X = sp.csr_matrix((np.array([1.0, 0.0, 2.0, 0.0]), np.array([0, 1, 2, 0]), np.array([0, 2, 3, 4])), shape=(3, 3))
    R = Rows.of(X).eliminate_zeros()
    assert R.nnz == 2 and list(R.indptr) == [0, 1, 2, 2] and np.array_equal(R.toarray(), X.toarray())


def test_of_refuses_a_vector():
    with pytest.raises(ValueError, match="2-d"):
        Rows.of(np.zeros(3))


@pytest.mark.slow
@settings(max_examples=100, deadline=None)
@given(matrices(max_rows=12), st.integers(1, 7), st.data())
def test_products_and_sums_made_a_piece_at_a_time_are_the_same_bits(dense, piece, data):
    """Products, per-group column sums and row sums are made a piece of entries at a time (for memory):
    each row's sum must be the same to the last bit as in one piece."""
    import nbtext.features.rows as rows

    R = Rows.of(dense * 0.37)
    n, m = dense.shape
    W = np.asarray(data.draw(st.lists(st.floats(-5, 5), min_size=2 * m, max_size=2 * m))).reshape(m, 2)
    group = np.asarray(data.draw(st.lists(st.integers(0, 2), min_size=n, max_size=n)), dtype=np.int64)
    counts = Rows.of(dense).astype(np.uint16)  # (row sums: converted to float64 as they are added)
    whole = (R @ W, R.column_sums_by_row_group(group, 3, token_major=True), R.row_sums(),
             counts.row_sums(dtype=np.float64), R.row_sums(R.data * R.data))
    saved = rows.PIECE
    try:
        rows.PIECE = piece
        pieces = (R @ W, R.column_sums_by_row_group(group, 3, token_major=True), R.row_sums(),
                  counts.row_sums(dtype=np.float64), R.row_sums(R.data * R.data))
    finally:
        rows.PIECE = saved
    assert all(np.array_equal(a, b) for a, b in zip(whole, pieces))


@settings(max_examples=200, deadline=None)
@given(st.lists(st.integers(-3, 3) | st.sampled_from([2**40, -2**40]), max_size=30),
       st.sampled_from([np.int64, np.int32, np.float64, str]))
def test_distinct_is_numpys_unique(values, kind):
    """distinct (np.unique without its numpy.ma import) gives np.unique's values and dtype."""
    if kind is np.int32:
        values = [v for v in values if abs(v) < 2**31]
    a = np.asarray([kind(v) for v in values]) if kind is str else np.asarray(values, dtype=kind)
    got, want = distinct(a), np.unique(a)
    assert got.dtype == want.dtype and np.array_equal(got, want)


def test_row_sums_in_a_wider_type_add_each_entry_converted():
    """row_sums(dtype=float64) of 16-bit counts (calibration's lengths of its sample): the sums
    of the entries made float64, bit for bit, without wrapping past 65,535."""
    rng = np.random.default_rng(5)
    counts = rng.integers(0, 2**16, 5000).astype(np.uint16)
    indptr = np.concatenate([[0], np.sort(rng.integers(0, 5000, 40)), [5000]])
    R = Rows(counts, rng.integers(0, 90, 5000), indptr, 90)
    got = R.row_sums(dtype=np.float64)
    assert np.array_equal(got, R.row_sums(counts.astype(np.float64)))
    assert got.max() > 2**16 and got.dtype == np.float64


@pytest.mark.slow
@settings(max_examples=75, deadline=None)
@given(matrices(max_rows=12, max_cols=15), st.data())
def test_own_columns_by_the_kernel_are_numpys(dense, data):
    """Rows.own_columns (calibration's folds): the selected rows as float64 over the columns
    they hold, renumbered; the compiled kernel's arrays are numpy's, for 16-bit, 32-bit float
    and float64 values, 32- and 64-bit columns, masks and repeated row numbers; a row number out
    of range is refused either way."""
    from nbtext.features import kernel

    n = dense.shape[0]
    for dtype in (np.uint16, np.float32, np.float64):
        R = Rows.of(dense).astype(dtype)
        for idx in (np.int32, np.int64):
            R = Rows(R.data, R.indices.astype(idx), R.indptr, R.shape[1])
            pick = data.draw(st.one_of(st.lists(st.booleans(), min_size=n, max_size=n).map(np.array),
                                       st.lists(st.integers(0, max(n - 1, 0)), max_size=2 * n if n else 0)))
            pick = np.asarray(pick, dtype=bool if len(pick) and isinstance(pick[0], (bool, np.bool_)) else np.int64)
            got = R.own_columns(pick)
            if kernel.compiled() is None:
                pytest.skip("the compiled kernel is not built")
            with implementation("python"):
                want = R.own_columns(pick)
            for a, b in ((got[0].data, want[0].data), (got[0].indices, want[0].indices),
                         (got[0].indptr, want[0].indptr), (got[1], want[1])):
                assert a.dtype == b.dtype and np.array_equal(a, b)
            assert got[0].shape == want[0].shape
            sub = dense[np.flatnonzero(pick) if pick.dtype == bool else pick]
            assert np.array_equal(got[0].toarray(), sub[:, got[1]]) and not sub[:, np.setdiff1d(
                np.arange(dense.shape[1]), got[1])].any()
    with pytest.raises(IndexError):
        Rows.of(dense).own_columns(np.array([n]))


def test_rows_with_spare_entries_past_their_row_starts_are_read_as_numpy_reads_them():
    """The kernel's row functions find an entry's size from the bytes per entry: a Rows whose
    arrays run past its last row start (its entries are indptr[-1] of them) is handed to them
    cut to its entries, and gives numpy's values (32-bit floats were read as 64-bit; moved cut
    the same way, though numpy's own moved does not take such rows)."""
    R = Rows(np.arange(1, 7, dtype=np.float32), np.array([0, 1, 2, 0, 0, 0], np.int32), np.array([0, 3]), 3)
    F = Rows(np.arange(1, 5, dtype=np.float64), np.array([0, 2, 1, 0], np.int64), np.array([0, 2]), 3)
    for choice in ("", "python"):
        with implementation(choice):
            own, cols = R.own_columns([0])
            assert list(own.data) == [1.0, 2.0, 3.0] and list(cols) == [0, 1, 2]
            assert (F @ np.array([[1.0], [10.0], [100.0]]))[0, 0] == 201.0
