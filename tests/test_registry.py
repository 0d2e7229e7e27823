"""The one agent table (issue 25 item 3) and the parsing of agent specs (issue 27 items 4, 5 and 12): a bot
registered once is in the ladder, make_bot, every command's help and the docs; budgets have one strict parser with
caps; nesting is bounded; an import path must yield an agent."""

from __future__ import annotations

import os
import time
from pathlib import Path

import numpy as np
import pytest

from agents import registry
from agents.registry import (
    MAX_NESTING,
    MAX_SIMULATIONS,
    AgentSpecError,
    check_spec,
    make_agent,
    make_bot,
    parse_count,
    parse_spec,
    register_bot,
)
from cassino_env.rules import make_rules
from train import cli

DOCS = Path(__file__).resolve().parent.parent / "docs" / "bots.md"


class FirstMove:
    """A bot that always plays the first listed move (the test's new ladder bot)."""

    name = "first-move"

    def __init__(self, rules):
        self.rules = rules

    def act(self, obs, rng):
        return np.zeros(len(obs["action_mask"]), dtype=np.int64)


@pytest.fixture
def new_bot():
    """``firstmove`` registered between greedy and beginner for the test, removed afterwards."""
    entry = register_bot("firstmove", FirstMove, "always the first listed move (a test bot)", rank=15)
    yield entry
    registry.unregister("firstmove")


def test_a_bot_registered_once_is_in_the_ladder_make_bot_the_help_and_the_docs(new_bot, capsys) -> None:
    """Issue 25 target: one new ladder bot in one place appears in LADDER, make_bot, the CLI help and the docs."""
    rules = make_rules("classic")
    assert registry.LADDER == ("random", "greedy", "firstmove", "beginner", "intermediate", "advanced")
    assert "firstmove" in registry.BOT_NAMES
    bot = make_bot("firstmove", rules)
    assert isinstance(bot, FirstMove) and bot.name == "firstmove" and bot.rules is rules
    assert make_agent("firstmove", rules).name == "firstmove"
    assert registry.expand_specs(["ladder"])[2] == "firstmove"
    for command in ("eval", "play", "exploit", "serve"):
        with pytest.raises(SystemExit):
            cli.main([command, "--help"])
        assert "firstmove" in capsys.readouterr().out.replace("\n", " "), command
    assert "| `firstmove`" in registry.markdown_table()
    assert "| 3 " in next(line for line in registry.markdown_table().splitlines() if "`firstmove`" in line)
    with pytest.raises(AgentSpecError, match="unknown agent 'nobody'; agents are random, greedy, firstmove"):
        make_agent("nobody", rules)
    registry.unregister("firstmove")
    assert "firstmove" not in registry.LADDER
    with pytest.raises(SystemExit):
        cli.main(["play", "--help"])
    assert "firstmove" not in capsys.readouterr().out  # the help follows the table


def test_the_docs_table_is_the_registry_table() -> None:
    page = DOCS.read_text(encoding="utf-8")
    assert registry.docs_page_table(page) == page, "docs/bots.md is stale: python -m agents.registry --write-docs"


def test_a_bot_need_not_be_a_scripted_style_and_names_are_checked() -> None:
    with pytest.raises(ValueError, match="registered already"):
        register_bot("greedy", FirstMove, "a second greedy")
    with pytest.raises(ValueError, match="lower-case"):
        register_bot("My Bot", FirstMove, "bad name")
    with pytest.raises(ValueError, match="one line"):
        register_bot("twolines", FirstMove, "a\nb")
    assert "twolines" not in registry.ENTRIES


@pytest.mark.parametrize("text", ["+5", " 5", "5 ", "1_000", "\u0665", "\u00b2", "0", "-1", "", "5.0", "0x10",
                                  "99999999999999", str(MAX_SIMULATIONS + 1), "1e3"])
def test_one_strict_parser_refuses_signs_spaces_underscores_and_values_past_the_cap(text: str) -> None:
    """Issue 27 item 4: int() took a sign, spaces and _, so the web cap was bypassed (a 47.7 GiB allocation)."""
    with pytest.raises(AgentSpecError, match=r"pimc:N needs a positive number of at most 100000, in digits 0-9"):
        parse_count(text, what="pimc:N", cap=MAX_SIMULATIONS)
    if text != text.rstrip():
        return  # a spec's own surrounding spaces are not part of it ("pimc:5 " is pimc:5)
    with pytest.raises(AgentSpecError):
        parse_spec(f"pimc:{text}")
    with pytest.raises(AgentSpecError):
        parse_spec(f"endgame:ismcts:{text}")


def test_budgets_within_the_cap_parse() -> None:
    assert parse_count("0064", what="pimc:N", cap=100) == 64
    assert parse_spec("pimc:100000").budget == MAX_SIMULATIONS
    assert parse_spec("endgame:pimc:64").inner.budget == 64
    assert parse_spec("pimc").budget is None


def test_nesting_is_bounded_without_recursion() -> None:
    """Issue 27 item 5: "endgame:" * 3000 + "random" was a RecursionError (a 500 in the web app)."""
    deep = "endgame:" * 300 + "random"
    start = time.perf_counter()
    with pytest.raises(AgentSpecError, match=f"specs nest at most {MAX_NESTING} deep"):
        parse_spec(deep)
    with pytest.raises(AgentSpecError, match="nest at most"):
        make_agent(deep, make_rules("classic"))
    with pytest.raises(AgentSpecError, match="at most 4096 characters"):  # the 3000: longer than a spec
        make_agent("endgame:" * 3000 + "random", make_rules("classic"))
    assert time.perf_counter() - start < 1.0
    assert len(parse_spec("endgame:" * MAX_NESTING + "random").chain()) == MAX_NESTING + 1
    with pytest.raises(AgentSpecError, match="at most 4096 characters"):
        parse_spec("checkpoint:" + "x" * 5000)


@pytest.mark.parametrize("spec", ["pimc:+99999999", "pimc: 30000", "pimc:1_000_000", "endgame:pimc:+9999999",
                                  "endgame:" * 3000 + "random", "policy:endgame:advanced"])
def test_the_web_app_answers_400_to_bypasses_of_its_budget_and_deep_nesting(spec: str) -> None:
    pytest.importorskip("starlette")
    from train.serve import RequestError, check_opponent

    with pytest.raises(RequestError, match="^opponent: ") as caught:
        check_opponent(spec)
    assert caught.value.status == 400


def test_the_web_app_still_offers_its_bots() -> None:
    pytest.importorskip("starlette")
    from train.serve import check_opponent

    for spec in ("advanced", "pimc", "pimc:20000", "endgame:pimc:64", "policy:pretrained:classic",
                 "pretrained:classic"):
        assert check_opponent(spec) == spec


def test_an_import_path_that_is_no_agent_is_refused_and_never_called(monkeypatch, capsys) -> None:
    """Issue 27 item 12: ``eval --agents os:system,random`` called os.system with a RuleSet."""
    calls: list[object] = []
    monkeypatch.setattr(os, "system", lambda arg: calls.append(arg) or 0)
    assert cli.main(["eval", "--agents", "os:system,random", "--deals", "2", "--no-progress"]) == 2
    err = capsys.readouterr().err
    assert err.startswith("error: ") and "os:system" in err and "not an agent class" in err
    assert len(err.strip().splitlines()) == 1 and calls == []


def test_eval_refuses_a_budget_past_the_cap_in_one_line(capsys) -> None:
    """Issue 27 item 12: ``eval --agents pimc:99999999999999`` was an array-memory traceback."""
    assert cli.main(["eval", "--agents", "pimc:99999999999999,random", "--deals", "2", "--no-progress"]) == 2
    err = capsys.readouterr().err
    assert err.startswith("error: ") and "at most 100000" in err and len(err.strip().splitlines()) == 1


def test_the_trainer_takes_import_paths_in_its_agent_lists() -> None:
    """Issue 25: ``Args(eval_opponents=("mybot:MostCards",))`` raised ConfigError (the trainer kept its own list)."""
    pytest.importorskip("torch")
    from train.config import ConfigError
    from train.ppo_selfplay import Args

    args = Args(eval_opponents=("mybot:MostCards",), bot_rates={"mybot:MostCards": 0.2, "endgame:greedy": 0.1},
                final_eval_opponents=("ladder", "pimc:64"))
    assert args.eval_opponents == ("mybot:MostCards",)
    for bad in ("pimc:+5", "endgame:" * 20 + "random", "nosuch", "policy:greedy"):
        with pytest.raises(ConfigError, match="^eval_opponents: "):
            Args(eval_opponents=(bad,))
    check_spec("ladder", ladder_ok=True)
    with pytest.raises(AgentSpecError):
        check_spec("ladder")


def test_only_commands_that_take_ladder_offer_it(capsys) -> None:
    """A new-user trial: ``cassino play --opponent ladder`` was refused by a message (and a --help) that offered
    ``ladder`` (an agent list's shorthand for several bots); play, exploit and serve take one agent."""
    assert cli.main(["play", "--opponent", "ladder"]) == 2
    err = capsys.readouterr().err
    assert "only for a list of agents (cassino eval --agents)" in err and "ladder stands for random" not in err
    assert cli.main(["play", "--opponent", "nobody"]) == 2
    err = capsys.readouterr().err
    assert "unknown agent 'nobody'; agents are random" in err and "ladder stands for" not in err
    for command in ("play", "exploit", "serve"):
        with pytest.raises(SystemExit):
            cli.main([command, "--help"])
        assert "ladder stands for" not in " ".join(capsys.readouterr().out.split()), command
    with pytest.raises(SystemExit):  # eval's agent list takes ladder: its help and message say what it stands for
        cli.main(["eval", "--help"])
    assert "ladder stands for random, greedy" in " ".join(capsys.readouterr().out.split())
    assert cli.main(["eval", "--agents", "greedy,nobody", "--deals", "10"]) == 2
    assert "agents are random" in (err := capsys.readouterr().err) and "; ladder stands for random" in err
    with pytest.raises(AgentSpecError, match="ladder stands for random"):
        check_spec("nobody", ladder_ok=True)
    with pytest.raises(AgentSpecError, match="only for a list of agents"):
        check_spec("endgame:ladder", ladder_ok=True)


def test_serve_checks_the_allowed_specs_before_it_starts(capsys) -> None:
    pytest.importorskip("starlette")
    from train.serve import main

    for spec in ("pimc:+5", "endgame:" * 20 + "random", "nosuch"):
        assert main(port=0, allow_agent=(spec,)) == 2
        err = capsys.readouterr().err
        assert err.startswith("error: allow-agent: ") and len(err.strip().splitlines()) == 1


@pytest.mark.parametrize(("spec", "said"), [
    ("search:ladder", "SPEC is a trained network"), ("search:foo", "SPEC is a trained network"),
    ("search:", "search needs an argument"), ("search:checkpoint:", "checkpoint needs an argument"),
    ("search:policy:random", "policy:SPEC plays a trained network alone"),
    ("search:pretrained:classic:0", "needs a budget 1..100000"), ("endgame:search:ladder", "SPEC is a trained network"),
])
def test_the_check_of_a_spec_reads_the_argument_of_search(spec: str, said: str, capsys) -> None:
    """A breaker review: ``cassino serve --allow-agent search:ladder`` started the server (the check took any text
    after search:); play, eval and exploit, which build the agent, refused it. The table's check of search's
    argument refuses what building it would refuse for its form, reading no file."""
    for check in (parse_spec, check_spec):
        with pytest.raises(AgentSpecError, match=said):
            check(spec)
    with pytest.raises(AgentSpecError, match=said):
        make_agent(spec, make_rules("classic"))
    pytest.importorskip("starlette")
    from train.serve import main

    assert main(port=0, allow_agent=(spec,)) == 2
    err = capsys.readouterr().err
    assert err.startswith("error: allow-agent: ") and said in err and len(err.strip().splitlines()) == 1


def test_the_check_of_search_takes_every_network_spec() -> None:
    for spec in ("search:pretrained:classic", "search:pretrained:classic:64", "search:checkpoint:runs/x.pt:8",
                 "search:policy:pretrained:classic", "endgame:search:checkpoint:/nonexistent/x.pt"):
        check_spec(spec)  # the form only: no file is read
    with pytest.raises(AgentSpecError, match="unknown pretrained agent 'nosuch'"):  # the shipped names are known
        parse_spec("search:pretrained:nosuch")


#: Hostile agent specs: each must be refused with an AgentSpecError (or, for a file that is no checkpoint, a
#: CheckpointError), never another exception, a call of the named object or a hang.
HOSTILE_SPECS = [
    "", " ", ":", "::", "pimc:", "pimc::", "pimc:1:2", "pimc:\u0661", "pimc:9" + "9" * 5000, "pimc:-" + "9" * 5000,
    "greedy:", "greedy:1", "ladder", "LADDER", "Greedy", "endgame:", "policy:", "policy:greedy", "policy:pimc:5",
    "policy:mypkg:Bot", "endgame:" * (MAX_NESTING + 1) + "random", "endgame:" * 3000 + "random", "checkpoint:",
    "checkpoint:/nonexistent/x.pt", "checkpoint:/etc/passwd", "checkpoint:/dev/null", "pretrained:",
    "pretrained:../classic", "pretrained:nosuch", "os:system", "os:getcwd", "builtins:eval", "builtins:exec",
    "subprocess:Popen", "shutil:rmtree", "json:loads", "agents.registry:make_agent", "agents.registry:ENTRIES",
    "agents.bots:ScriptedBot", "agents.bots:RandomBot", "a:b:c", "1abc:X", "mod:1x", "\x00", "\u00e9:x",
    "nosuchmodule_xyz:Bot", "x" * 5000, None, 5, b"greedy", ["greedy"], 1.5,
]


@pytest.mark.parametrize("spec", HOSTILE_SPECS, ids=range(len(HOSTILE_SPECS)))
def test_hostile_agent_specs_are_refused_with_the_documented_error(spec, monkeypatch) -> None:
    calls: list[object] = []
    monkeypatch.setattr(os, "system", lambda *a, **k: calls.append(a))
    try:
        from agents.ppo_agent import CheckpointError
    except ImportError:  # no torch: checkpoint specs fail before a file is read
        CheckpointError = AgentSpecError  # noqa: N806
    start = time.perf_counter()
    with pytest.raises((AgentSpecError, CheckpointError)) as caught:
        make_agent(spec, make_rules("classic"))
    assert len(str(caught.value)) < 1200 and calls == []
    assert time.perf_counter() - start < 5.0


def test_the_spec_check_knows_the_shipped_pretrained_names() -> None:
    """A breaker review: ``check_spec('pretrained:nosuch')`` passed (serve started with it); the check now refuses a
    name that is not shipped, without reading a file."""
    from agents.registry import AgentSpecError, check_spec, pretrained_names

    for spec in ("pretrained:nosuch", "search:pretrained:nosuch:8", "policy:pretrained:nosuch"):
        with pytest.raises(AgentSpecError, match="unknown pretrained agent 'nosuch'"):
            check_spec(spec)
    for name in pretrained_names():
        check_spec(f"pretrained:{name}")


@pytest.mark.parametrize("spec", ["search:pretrained:classic:-5", "search:pretrained:classic:+5",
                                  "search:pretrained:classic:1.5", "search:pretrained:classic:1e3",
                                  "search:pretrained:classic:abc", "search:policy:pretrained:classic:-5",
                                  "search:checkpoint:runs/x/latest.pt:-5", "search:checkpoint:runs/x.pt: 2.5"])
def test_a_search_budget_that_is_not_digits_is_named_as_a_budget(spec: str, capsys) -> None:
    """Issue 50 item 10: ``search:pretrained:classic:-5`` said "unknown pretrained agent 'classic:-5'"."""
    with pytest.raises(AgentSpecError, match=r"search:SPEC:N needs a budget 1\.\.100000 rollouts per decision"):
        check_spec(spec)
    assert cli.main(["eval", "--agents", f"{spec},random", "--deals", "2", "--no-progress"]) == 2
    err = capsys.readouterr().err
    assert err.startswith("error: ") and "needs a budget" in err and len(err.strip().splitlines()) == 1


def test_search_specs_near_the_budget_rule_keep_their_meaning() -> None:
    check_spec("search:pretrained:classic:7")
    check_spec("search:pretrained:classic")
    with pytest.raises(AgentSpecError, match="unknown pretrained agent 'nosuch'"):
        check_spec("search:pretrained:nosuch")
