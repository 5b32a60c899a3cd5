"""The fuzz harness keeps every failure it finds as a corpus file that replays the same input
(issue 10: "every failure it ever finds is kept as a corpus file replayed by the tests").

A failure is made on purpose by lowering the harness's time bound to nothing, so every run of
`check` counts as too slow; the corpus directory is a temporary one.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import fuzz_support
import pytest
from fuzz_support import Sandbox, check_property, read_case
from hostile_support import invoke, make_repo

# Bytes a mutant may hold that a text-mode read would change or refuse: a lone carriage return
# and CRLF (universal newlines turn both into \n), NEL, a line separator, a lone surrogate.
ODD = "apiVersion: v1\rkind: ConfigMap\r\nmetadata: {name: odd}\x85data: {a: \"\u2028\ud800\"}\n"


@pytest.fixture
def sandbox(tmp_path: Path) -> Sandbox:
    return Sandbox(make_repo(tmp_path))


@pytest.fixture
def corpus(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    """A fresh corpus, a new run (nothing kept yet) and saving on, as `make fuzz` sets it."""
    d = tmp_path / "corpus"
    monkeypatch.setattr(fuzz_support, "CORPUS", d)
    monkeypatch.setattr(fuzz_support, "_KEPT", {})
    monkeypatch.setenv("TOPOGATE_FUZZ_SAVE", "1")
    yield d


def fail(sandbox: Sandbox, text: str, monkeypatch: pytest.MonkeyPatch) -> None:
    with monkeypatch.context() as m:
        m.setattr(fuzz_support, "SECONDS", 0.0)
        with pytest.raises(AssertionError, match="s for check"):
            check_property(sandbox, "manifest", text)


def test_a_failure_is_kept_byte_for_byte_and_replays_the_same_input(
        sandbox: Sandbox, corpus: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    fail(sandbox, ODD, monkeypatch)
    kept = sorted(corpus.iterdir())
    assert [p.name.split("-", 1)[0] for p in kept] == ["manifest"]  # what test_corpus replays
    assert read_case(kept[0]) == ODD
    assert kept[0].read_text(encoding="utf-8", errors="surrogatepass") != ODD  # why read_case reads bytes
    # the replay writes exactly those bytes where the fuzzer wrote the mutant
    _, mutated = sandbox.write("manifest", read_case(kept[0]))
    assert mutated.read_bytes() == ODD.encode("utf-8", "surrogatepass")


def test_shrinking_keeps_the_smallest_of_one_run(
        sandbox: Sandbox, corpus: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    for text in ("kind: A\n# a longer comment\n", "kind: A\n", "kind: A\n# longer again, ignored\n"):
        fail(sandbox, text, monkeypatch)
    assert [read_case(p) for p in corpus.iterdir()] == ["kind: A\n"]


def test_a_later_run_never_replaces_what_an_earlier_one_kept(
        sandbox: Sandbox, corpus: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    fail(sandbox, "kind: First\n# the first run's failure\n", monkeypatch)
    monkeypatch.setattr(fuzz_support, "_KEPT", {})  # a new `make fuzz` run
    fail(sandbox, "kind: B\n", monkeypatch)  # smaller, same signature: maybe another bug
    texts = sorted(read_case(p) for p in corpus.iterdir())
    assert texts == ["kind: B\n", "kind: First\n# the first run's failure\n"]


def test_an_interrupted_run_keeps_nothing(
        sandbox: Sandbox, corpus: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    def interrupted(*args: str) -> tuple[int, str, str]:
        raise KeyboardInterrupt

    monkeypatch.setattr(fuzz_support, "invoke", interrupted)
    with pytest.raises(KeyboardInterrupt):
        check_property(sandbox, "manifest", "kind: A\n")
    assert not corpus.exists()


def test_trace_reaches_a_verdict_on_the_mutant(sandbox: Sandbox, monkeypatch: pytest.MonkeyPatch) -> None:
    """Trace must evaluate the mutant's policies, not stop at "no PyTorchJob ml-demo/train" (the
    base's job has no namespace; the inventory puts it in ml-demo)."""
    seen: list[tuple[list[str], int, str]] = []

    def recording(*args: str) -> tuple[int, str, str]:
        code, out, err = invoke(*args)
        seen.append((list(args), code, out))
        return code, out, err

    monkeypatch.setattr(fuzz_support, "invoke", recording)
    check_property(sandbox, "manifest", (fuzz_support.ROOT / "fixtures/trace/lab/policies.yaml").read_text())
    (args, code, out), = [s for s in seen if s[0][0] == "trace"]
    assert code in (0, 1) and "\nverdict: " in out, out
