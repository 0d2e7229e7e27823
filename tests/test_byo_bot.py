"""Bring your own bot: an agent spec that is an import path, MODULE:OBJECT (agents.registry.load_agent), loads a
user-written class or factory following agents.base.Agent and plays it, from the API and from `cassino eval`."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

from agents.registry import AgentSpecError, make_agent
from cassino_env.rules import make_rules
from train import cli
from train.evaluate import evaluate

BOT = '''\
import numpy as np

from agents.registry import agent_factory


class MostCards:
    """Plays the capture that takes the most table cards, else the first listed move (docs/evaluation.md's example)."""

    name = "most-cards"

    def __init__(self, rules):
        self.rules = rules

    def act(self, obs, rng):
        taken = np.bitwise_count(obs["move_cards"]).astype(np.int64)
        taken[obs["move_kind"] != 1] = 0
        return np.where(obs["action_mask"] == 1, taken, -1).argmax(axis=1)


class Nameless:
    def __init__(self, rules):
        pass

    def act(self, obs, rng):
        return np.argmax(obs["action_mask"], axis=1)


@agent_factory
def make(rules):
    return MostCards(rules)


@agent_factory
def no_rules():
    return MostCards(None)


CALLS = []


def unmarked(rules):
    CALLS.append(rules)
    return MostCards(rules)


class NoInit:
    name = "no-init"

    def act(self, obs, rng):
        return np.argmax(obs["action_mask"], axis=1)


PLAYER = MostCards(None)


class NoAct:
    def __init__(self, rules):
        pass


NOT_CALLABLE = 3
'''


@pytest.fixture
def user_package(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A package ``userbots`` with the module ``userbots.mybot`` in a fresh folder, the current folder of the test
    and not on sys.path; removed from sys.modules afterwards."""
    pkg = tmp_path / "userbots"
    pkg.mkdir()
    (pkg / "__init__.py").write_text("", encoding="utf-8")
    (pkg / "mybot.py").write_text(BOT, encoding="utf-8")
    monkeypatch.chdir(tmp_path)
    monkeypatch.setattr(sys, "path", [p for p in sys.path if p not in ("", str(tmp_path))])
    yield tmp_path
    for name in [m for m in sys.modules if m == "userbots" or m.startswith("userbots.")]:
        del sys.modules[name]


def test_a_user_bot_loads_by_import_path_and_plays_an_evaluation(user_package: Path) -> None:
    rules = make_rules("classic")
    bot = make_agent("userbots.mybot:MostCards", rules)  # found in the current folder
    assert bot.name == "most-cards" and bot.rules is rules
    assert make_agent("userbots.mybot:make", rules).name == "most-cards"  # a factory works too
    report = evaluate(["userbots.mybot:MostCards", "random"], rules, deals=40, seed=1)
    (pair,) = report["pairs"]
    assert pair["a"] == "userbots.mybot:MostCards" and pair["matches"] > 0
    assert pair["match_win_rate_a"] > 0.5  # taking cards beats random play


def test_an_agent_object_is_used_as_it_is_and_an_unmarked_function_is_never_called(user_package: Path) -> None:
    """Issue 27 item 12: ``os:system`` was called with the RuleSet. Only classes with ``act``, agent objects and
    functions marked ``@agent_factory`` yield an agent; anything else is refused before any call."""
    rules = make_rules("classic")
    player = make_agent("userbots.mybot:PLAYER", rules)
    mybot = sys.modules["userbots.mybot"]
    assert player is mybot.PLAYER
    with pytest.raises(AgentSpecError, match="not an agent class"):
        make_agent("userbots.mybot:unmarked", rules)
    assert mybot.CALLS == []


def test_a_nameless_agent_is_named_by_its_spec(user_package: Path) -> None:
    assert make_agent("userbots.mybot:Nameless", make_rules("classic")).name == "userbots.mybot:Nameless"


@pytest.mark.parametrize(("spec", "message"), [
    ("userbots.nosuch:Bot", "no module named 'userbots.nosuch'"),
    ("nosuchpackage.bots:Bot", "no module named 'nosuchpackage'"),
    ("userbots.mybot:Missing", "has no attribute 'Missing'"),
    ("userbots.mybot:NOT_CALLABLE", "NOT_CALLABLE is a int, not an agent class"),
    ("userbots.mybot:no_rules", "must take one argument, the RuleSet"),
    ("userbots.mybot:NoInit", "must take one argument, the RuleSet"),
    ("userbots.mybot:NoAct", "a class without an act method"),
    ("userbots.mybot:unmarked", "unmarked is a function, not an agent class .* marked @agents.registry.agent_factory"),
    ("os:system", "system is a builtin_function_or_method, not an agent class"),
    ("os.path:join", "join is a function, not an agent class"),
    ("userbots.mybot:", "MODULE:OBJECT"),
    ("user-bots:Bot", "MODULE:OBJECT"),
])
def test_bad_import_paths_name_the_problem(user_package: Path, spec: str, message: str) -> None:
    with pytest.raises(AgentSpecError, match=message):
        make_agent(spec, make_rules("classic"))


def test_cassino_eval_plays_a_user_bot(user_package: Path, capsys: pytest.CaptureFixture[str]) -> None:
    out = user_package / "eval_out"
    code = cli.main(["eval", "--agents", "userbots.mybot:MostCards,greedy", "--deals", "20", "--seed", "3",
                     "--out-dir", str(out), "--no-progress"])
    assert code == 0
    assert "userbots.mybot:MostCards" in capsys.readouterr().out
    assert (out / "eval.json").is_file()
    assert cli.main(["eval", "--agents", "userbots.mybot:Missing,greedy", "--deals", "20",
                     "--out-dir", str(out), "--no-progress"]) == 2
    err = capsys.readouterr().err
    assert err.startswith("error: ") and "Missing" in err


def test_builtin_specs_are_not_import_paths() -> None:
    rules = make_rules("classic")
    assert make_agent("pimc:8", rules).name == "pimc:8"
    with pytest.raises(AgentSpecError, match="takes no argument"):
        make_agent("greedy:3", rules)
