"""shapes' unordered pass (_fine) says "no problem" exactly when the ordered walk finds none.

Every collected object is checked; the fast pass skips the sorting and paths the first
problem needs, and hands anything it does not pass to the ordered walk. Compared here on
random documents built from the shapes' own keys, with values of every type.
"""

from __future__ import annotations

from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from topogate.k8s import shapes


def _keys(shape: Any, out: set[str]) -> set[str]:
    if isinstance(shape, dict):
        for k, v in shape.items():
            out.add(k)
            _keys(v, out)
    elif isinstance(shape, list):
        _keys(shape[0], out)
    return out


_KEYS = sorted(_keys(list(shapes.SPECS.values()), set()) | {"*", "Master", "Worker", "x"})
_LEAVES = st.one_of(st.none(), st.booleans(), st.integers(-2**40, 2**40), st.floats(allow_nan=True),
                    st.sampled_from(["", "1", " 2 ", "-3", "x", "1.5", "99999999999", "8"]))
_VALUES = st.recursive(_LEAVES, lambda inner: st.one_of(
    st.lists(inner, max_size=3),
    st.dictionaries(st.one_of(st.sampled_from(_KEYS), st.integers(0, 2)), inner, max_size=5)),
    max_leaves=30)


@settings(max_examples=600, derandomize=True, database=None, deadline=None)
@given(kind=st.sampled_from(sorted(shapes.SPECS)), spec=_VALUES, metadata=_VALUES)
def test_fast_pass_agrees_with_the_ordered_walk(kind: str, spec: Any, metadata: Any) -> None:
    for value, shape in ((spec, shapes.SPECS[kind]), (metadata, shapes._METADATA)):
        assert shapes._fine(value, shape) == (shapes._first_problem(value, shape, ()) is None)


def _job(replicas: Any) -> dict[str, Any]:
    return {"apiVersion": "kubeflow.org/v1", "kind": "PyTorchJob", "metadata": {"name": "j"},
            "spec": {"pytorchReplicaSpecs": {"Master": {"replicas": replicas}}}}


def test_integer_texts_too_long_for_int_are_a_problem_not_a_traceback() -> None:
    # int() refuses texts past 4,300 digits, leading zeros included: the shape check must
    # answer for them (a field error, exit 2) instead of letting the ValueError escape.
    where = ("spec", "pytorchReplicaSpecs", "Master", "replicas")
    for text in ("1" * 5000, "0" * 5000 + "8", "-" + "9" * 4500):
        found = shapes.first_problem(_job(text))
        assert found is not None and found[0] == where, text[:20]
    # Short texts keep their answers: leading zeros are a small number, a big one is too big.
    assert shapes.first_problem(_job("0" * 30 + "8")) is None
    assert shapes.first_problem(_job("2147483648")) is not None
