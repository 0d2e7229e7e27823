"""Hostile ``cassino proxy`` files (issue 50, reliability 6): truncated, empty, missing metadata keys or arrays,
mismatched shapes or dtypes, metadata of another preset or seat count, NaN values, an empty set, unknown or oversized
arrays. Each is one :class:`train.proxy.ProxyError` naming the file and the field (``error:`` and exit 2 at the
command line), and only the arrays a proxy holds are ever unpacked."""

from __future__ import annotations

import contextlib
import io
import zipfile
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from cassino_env.rules import make_rules
from cassino_env.vector import CassinoVectorEnv
from train import proxy as proxy_mod
from train.proxy import FORMAT, FORMAT_VERSION, OBS_KEYS, ProxyError, load

RULES = make_rules("classic")


def _arrays(rules: Any = RULES, n: int = 6) -> tuple[dict[str, np.ndarray], dict[str, Any]]:
    env = CassinoVectorEnv(n, rules, with_view=True, seed=5)
    obs, _ = env.reset(seed=5)
    arrays = {k: np.array(obs[k]) for k in OBS_KEYS}
    arrays.update({f"view.{k}": np.array(v) for k, v in obs["view"].items()})
    mask = arrays["action_mask"] != 0
    values = np.where(mask, np.random.default_rng(0).normal(size=mask.shape), np.nan)
    arrays.update(values=values, exact=np.zeros(n, dtype=bool), source=np.zeros(n, dtype=np.int64))
    meta = {"format": FORMAT, "format_version": FORMAT_VERSION, "preset": rules.preset,
            "num_players": rules.num_players, "rules": repr(rules.to_dict()), "seed": 0, "simulations": 8,
            "match_bonus": 10.0, "sources": ["a vs b"], "complete": True, "collected": n}
    return arrays, meta


def _write(path: Path, arrays: dict[str, np.ndarray], meta: Any) -> Path:
    extra = {} if meta is None else {"meta": np.array(meta if isinstance(meta, str) else repr(meta))}
    np.savez_compressed(path, **arrays, **extra)
    return path


def _cases() -> dict[str, tuple[Any, str]]:
    """name -> (a function of (arrays, meta) returning (arrays, meta) or raw bytes, the message's pattern)."""
    def edit(**changes: Any) -> Any:
        def f(a: dict[str, np.ndarray], m: dict[str, Any]) -> Any:
            a, m = dict(a), dict(m)
            for k, v in changes.items():
                if k.startswith("meta_"):
                    key = k[5:]
                    if v is KeyError:
                        m.pop(key)
                    else:
                        m[key] = v
                elif v is KeyError:
                    a.pop(k.replace("__", "."))
                else:
                    a[k.replace("__", ".")] = v(a[k.replace("__", ".")]) if callable(v) else v
            return a, m
        return f

    def nan_at_listed(a: np.ndarray) -> np.ndarray:
        a = a.copy()
        a[2, 0] = np.nan
        return a

    def obs_nan(a: np.ndarray) -> np.ndarray:
        a = a.copy()
        a[1, 3] = np.nan
        return a

    def no_move(a: np.ndarray) -> np.ndarray:
        a = a.copy()
        a[4] = 0
        return a

    cases: dict[str, tuple[Any, str]] = {
        "empty": (lambda a, m: b"", "not a readable proxy file"),
        "text": (lambda a, m: b"hello\n", "not a readable proxy file"),
        "no-meta": (lambda a, m: (a, None), "no 'meta' array"),
        "meta-not-dict": (lambda a, m: (a, "[1, 2]"), "not a cassino-proxy file"),
        "meta-garbage": (lambda a, m: (a, "{{{"), "not a cassino-proxy file"),
        "meta-version-2": (edit(meta_format_version=2), "of version 1"),
        "meta-bad-preset": (edit(meta_preset="nosuch"), "meta.preset"),
        "meta-preset-bool": (edit(meta_num_players=True), "meta.num_players"),
        "meta-other-preset": (edit(meta_preset="royal"), "meta.rules: not the rules of preset 'royal'"),
        "meta-other-seats": (edit(meta_num_players=3, meta_rules=repr(make_rules("classic", 3).to_dict())),
                             r"array 'observation'.*expected float32"),
        "meta-sources-ints": (edit(meta_sources=[1, 2]), "meta.sources"),
        "values-M": (edit(values=lambda v: v[:, :7]), r"array 'values': float64 of shape \(6, 7\)"),
        "values-int": (edit(values=lambda v: np.zeros(v.shape, dtype=np.int64)), "array 'values': int64"),
        "captured-P": (edit(view__captured=lambda v: np.concatenate([v, v], axis=1)), "array 'view.captured'"),
        "exact-N": (edit(exact=lambda v: v[:3]), "array 'exact'"),
        "action-mask-1d": (edit(action_mask=lambda v: v[:, 0]), "array 'action_mask'"),
        "values-nan-listed": (edit(values=nan_at_listed), "a listed move of position 2 has no finite value"),
        "values-inf-listed": (edit(values=lambda v: np.where(np.isnan(v), v, np.inf)), "no finite value"),
        "obs-nan": (edit(observation=obs_nan), "array 'observation': values outside"),
        "card-out-of-range": (edit(move_card=lambda v: np.full_like(v, 60)), "array 'move_card': values outside"),
        "no-legal-move": (edit(action_mask=no_move), "position 4 has no listed move"),
        "source-out-of-range": (edit(source=lambda v: v + 1), r"array 'source': an entry outside 0\.\.0"),
        # inside the spaces, but not positions of the rules: agents crashed on them (IndexError, a segfault in pimc)
        "kind-of-padding-listed": (edit(action_mask=np.ones_like, values=np.zeros_like), "position 0 lists other"),
        "card-not-held": (edit(move_card=lambda v: np.where(v >= 0, (v + 1) % 52, v)), "lists other moves"),
        "mover-not-viewer": (edit(current_player=lambda v: 1 - v), "array 'current_player': position 0"),
        "view-impossible": (edit(view__stock_size=lambda v: v // 2), r"array 'view\.\*': position 0 is not a "),
        "missing-values": (edit(values=KeyError), "missing array.*values"),
        "missing-view": (edit(view__unseen=KeyError), "missing array 'view.unseen'"),
        "empty-set": (edit(**{k: (lambda v: v[:0]) for k in ["values", "exact", "source", *OBS_KEYS]},
                           **{f"view__{k}": (lambda v: v[:0]) for k in
                              ["viewer", "hand", "loose", "build_cards", "build_value", "build_owner", "captured",
                               "sweeps", "in_play", "hand_sizes", "stock_size", "dealer", "last_capturer",
                               "last_trail", "match_scores", "unseen"]}), r"no positions \(N = 0\)"),
    }
    for key in ("preset", "num_players", "rules", "sources", "simulations"):
        cases[f"meta-missing-{key}"] = (edit(**{f"meta_{key}": KeyError}), f"meta.{key}: missing")
    return cases


CASES = _cases()


@pytest.fixture(scope="module")
def good() -> tuple[dict[str, np.ndarray], dict[str, Any]]:
    return _arrays()


@pytest.mark.parametrize("kind", sorted(CASES))
def test_fuzz_proxy_files_are_one_error_naming_the_field(good: Any, tmp_path: Path, kind: str) -> None:
    make, said = CASES[kind]
    made = make(*good)
    path = tmp_path / "p.npz"
    if isinstance(made, bytes):
        path.write_bytes(made)
    else:
        _write(path, *made)
    with pytest.raises(ProxyError, match=said) as info:
        load(path)
    assert str(info.value).startswith(str(path)) and "\n" not in str(info.value)


def test_a_truncated_file_is_one_error(good: Any, tmp_path: Path) -> None:
    whole = _write(tmp_path / "whole.npz", *good).read_bytes()
    for cut in (10, len(whole) // 2, len(whole) - 30):
        (tmp_path / "cut.npz").write_bytes(whole[:cut])
        with pytest.raises(ProxyError, match="not a readable proxy file"):
            load(tmp_path / "cut.npz")


def test_a_good_file_loads_and_scores(good: Any, tmp_path: Path) -> None:
    from agents.registry import make_agent

    p = load(_write(tmp_path / "p.npz", *good))
    assert len(p) == 6 and p.values.dtype == np.float64 and p.obs["view"]["captured"].shape == (6, 2)
    r = proxy_mod.score(make_agent("greedy", p.rules), p)
    assert r["positions"] == 6 and np.isfinite(r["regret"])


def test_unknown_arrays_are_never_unpacked(good: Any, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A 1.4 MB file took 1.5 GB: every array in it was unpacked. Here a 64 MB array of zeros beside a good set is
    let be, and only the proxy's own arrays are read."""
    path = _write(tmp_path / "p.npz", *good)
    with zipfile.ZipFile(path, "a", compression=zipfile.ZIP_DEFLATED) as z, z.open("junk.npy", "w") as f:
        np.lib.format.write_array(f, np.zeros(1 << 23))
    read: list[int] = []
    real = np.lib.format.read_array

    def counting(f: Any, *args: Any, **kwargs: Any) -> np.ndarray:
        out = real(f, *args, **kwargs)
        read.append(out.nbytes)
        return out

    monkeypatch.setattr(np.lib.format, "read_array", counting)
    assert len(load(path)) == 6 and max(read) < 1 << 20


def test_a_set_past_the_size_cap_is_refused_from_its_headers(good: Any, tmp_path: Path,
                                                             monkeypatch: pytest.MonkeyPatch) -> None:
    path = _write(tmp_path / "p.npz", *good)
    monkeypatch.setattr(proxy_mod, "MAX_UNPACKED_BYTES", 10_000)

    def unpacked(*args: Any, **kwargs: Any) -> None:
        raise AssertionError("an array was unpacked before the sizes were checked")

    real = np.lib.format.read_array
    monkeypatch.setattr(np.lib.format, "read_array",
                        lambda f, *a, **k: real(f, *a, **k) if f.name == "meta.npy" else unpacked())
    with pytest.raises(ProxyError, match=r"unpack to [\d,]+ bytes, over the 10,000 allowed"):
        load(path)


@pytest.mark.parametrize("kind", ["empty", "meta-missing-preset", "values-M", "values-nan-listed", "empty-set"])
def test_cassino_proxy_reports_a_bad_file_as_one_error_line(good: Any, tmp_path: Path, kind: str) -> None:
    from train import cli

    made = CASES[kind][0](*good)
    path = tmp_path / "p.npz"
    if isinstance(made, bytes):
        path.write_bytes(made)
    else:
        _write(path, *made)
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        code = cli.main(["proxy", "--agents", "random", "--path", str(path)])
    assert code == 2 and out.getvalue() == "", out.getvalue()
    assert err.getvalue().startswith("error: ") and err.getvalue().count("\n") == 1, err.getvalue()


@pytest.mark.parametrize("options", [["--num-players", "3"], ["--preset", "royal"]])
def test_cassino_proxy_refuses_options_naming_other_rules_than_the_files(good: Any, tmp_path: Path,
                                                                        options: list[str]) -> None:
    from train import cli

    path = _write(tmp_path / "p.npz", *good)
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        code = cli.main(["proxy", "--agents", "random", "--path", str(path), *options])
    assert code == 2 and out.getvalue() == "", (out.getvalue(), err.getvalue())
    assert err.getvalue().startswith("error: preset / num_players: ") and "classic with 2 players" in err.getvalue()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        assert cli.main(["proxy", "--agents", "random", "--path", str(path), "--num-players", "2"]) == 0


def test_cassino_proxy_default_file_missing_names_the_build_command(tmp_path: Path,
                                                                    monkeypatch: pytest.MonkeyPatch) -> None:
    """A new user's report: the hint built a classic set under the cicera name (make_proxy.py's default preset)."""
    from train import cli

    monkeypatch.setenv("CASSINO_PROXY_DIR", str(tmp_path))
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        code = cli.main(["proxy", "--agents", "random", "--preset", "cicera"])
    assert code == 2 and out.getvalue() == ""
    assert "cicera-4p.npz: no proxy file" in err.getvalue()
    assert "scripts/make_proxy.py --preset cicera --num-players 4" in err.getvalue(), err.getvalue()


def test_cassino_proxy_refuses_a_default_file_of_other_rules(good: Any, tmp_path: Path,
                                                            monkeypatch: pytest.MonkeyPatch) -> None:
    """A classic set under the default name of cicera at 4 seats is refused, not scored as cicera's."""
    from train import cli

    monkeypatch.setenv("CASSINO_PROXY_DIR", str(tmp_path))
    _write(tmp_path / "cicera-4p.npz", *good)
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        code = cli.main(["proxy", "--agents", "random", "--preset", "cicera"])
    assert code == 2 and out.getvalue() == "", out.getvalue()
    assert "holds positions of classic with 2 players, not of cicera with 4" in err.getvalue(), err.getvalue()
    assert err.getvalue().count("\n") == 1
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):  # its own name scores it
        _write(tmp_path / "classic-2p.npz", *good)
        assert cli.main(["proxy", "--agents", "random"]) == 0
