"""Agents by name: one string spec per agent, as the ``eval`` and ``play`` commands take them.

==================  ==========================================================================================
spec                agent
==================  ==========================================================================================
``random``          uniformly random legal moves (:class:`agents.bots.RandomBot`)
``greedy``          the move that scores most now (:mod:`agents.bots`)
``beginner``        hand-written strategies of increasing strength (:mod:`agents.bots`)
``intermediate``
``advanced``
``pimc``            flat Monte Carlo over determinisations at its default budget (:mod:`agents.pimc`)
``pimc:N``          the same with N simulations (rollouts) per decision
``ismcts[:N]``      the same agent as ``pimc[:N]``, under its first name
``checkpoint:PATH`` a trained policy (``agents.ppo_agent.load_checkpoint_agent``; torch is imported only then),
                    which plays the last round of a two-seat deal exactly (:mod:`agents.endgame`)
``pretrained:NAME`` a checkpoint shipped with the package, ``agents/pretrained/NAME.pt`` (:func:`pretrained_names`):
                    ``classic``, ``classic-4p``, ... the default ``cassino train`` run of that preset; as
                    ``checkpoint:``, with the exact last round
``policy:SPEC``     the network alone of ``SPEC`` (``checkpoint:PATH`` or ``pretrained:NAME``): every move from the
                    policy, the last round too
``endgame:SPEC``    any agent with the exact last round of a two-seat deal (``endgame:advanced``); an agent
                    that has it already (``pretrained:NAME``, ``endgame:SPEC``) is only renamed
``MODULE:OBJECT``   your own agent (:func:`load_agent`): ``OBJECT`` of module ``MODULE``, a class or factory
                    called with the RuleSet, whose result follows :class:`agents.base.Agent`
                    (``mypkg.mybot:MyBot``)
==================  ==========================================================================================

In an agent list, ``ladder`` stands for the bots of :data:`LADDER` (:func:`expand_specs`).

>>> from cassino_env.rules import make_rules
>>> make_agent("greedy", make_rules("classic")).name
'greedy'
>>> make_agent("pimc:64", make_rules("classic")).name
'pimc:64'
>>> make_agent("ismcts:64", make_rules("classic")).name  # the alias: the same agent, named as asked
'ismcts:64'
>>> expand_specs(["checkpoint:x.pt", "ladder"])
['checkpoint:x.pt', 'random', 'greedy', 'beginner', 'intermediate', 'advanced']
"""

from __future__ import annotations

import importlib
import inspect
import os
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import TypeVar

from agents.base import Agent
from cassino_env.errors import excerpt
from cassino_env.rules import RuleSet

#: The bot ladder, weakest first: the scripted bots of :mod:`agents.bots`, the one list ``ladder`` stands for in
#: ``cassino eval --agents`` and in the trainer's opponent lists. The search bot is left out: it is slow.
LADDER = ("random", "greedy", "beginner", "intermediate", "advanced")
#: The search bot's names: ``pimc``, and ``ismcts``, its first name, kept as an alias (both take ``:N``).
SEARCH_NAMES = ("pimc", "ismcts")
#: The names of the agents that need no argument: the ladder, then the search bot (which takes an optional budget).
BOT_NAMES = (*LADDER, *SEARCH_NAMES)
#: The names a spec ``NAME:ARG`` may start with besides an import path (``MODULE:OBJECT``, :func:`load_agent`).
BUILTIN_PREFIXES = ("checkpoint", "pretrained", "policy", "endgame", *BOT_NAMES)

_Spec = TypeVar("_Spec")

#: The folder of the shipped checkpoints (``pretrained:NAME`` is ``PRETRAINED_DIR / f"{NAME}.pt"``).
PRETRAINED_DIR = Path(__file__).resolve().parent / "pretrained"


def pretrained_names() -> tuple[str, ...]:
    """The names ``pretrained:NAME`` accepts: one per shipped checkpoint file, sorted."""
    return tuple(sorted(p.stem for p in PRETRAINED_DIR.glob("*.pt")))


class AgentSpecError(ValueError):
    """An agent spec that names no agent, or a bad argument (the message says which and lists the specs)."""


def make_agent(spec: str, rules: RuleSet) -> Agent:
    """The agent named by ``spec`` (see the module table) for ``rules``; its ``name`` is the spec.

    Raises:
        AgentSpecError: an unknown name or a bad argument, or a spec that is not a string.
        agents.ppo_agent.CheckpointError: a checkpoint that cannot be loaded for ``rules`` (names file and problem).
    """
    if not isinstance(spec, str):
        raise AgentSpecError(f"an agent spec is a string such as 'greedy' or 'pimc:64', got {type(spec).__name__} "
                             f"{excerpt(spec)}")
    name, sep, arg = spec.strip().partition(":")
    if sep and name not in BUILTIN_PREFIXES:
        return load_agent(spec.strip(), rules)
    if name in ("policy", "endgame"):
        if not arg.strip():
            raise AgentSpecError(f"{name} needs an agent spec: {name}:SPEC (e.g. {name}:pretrained:classic)")
        if name == "policy" and arg.strip().partition(":")[0] not in ("checkpoint", "pretrained"):
            raise AgentSpecError(f"policy:SPEC plays a trained network alone: SPEC is checkpoint:PATH or "
                                 f"pretrained:NAME, got {excerpt(arg)}")
        inner = make_agent(arg, rules)
        if name == "policy":
            inner.endgame = False  # a PPOAgent: checkpoint and pretrained specs make one
            inner.name = spec.strip()
            return inner
        from agents.endgame import EndgameAgent

        if arg.strip().partition(":")[0] in ("checkpoint", "pretrained", "endgame"):  # exact already: solve once
            inner.name = spec.strip()
            return inner
        return EndgameAgent(inner, rules, name=spec.strip())
    if name == "checkpoint":
        if not arg:
            raise AgentSpecError("checkpoint needs a path: checkpoint:PATH")
        try:
            from agents.ppo_agent import load_checkpoint_agent  # lazily: imports torch
        except ImportError as exc:
            raise AgentSpecError(f"checkpoint agents need agents/ppo_agent.py (load_checkpoint_agent) and torch: "
                                 f"{exc}") from exc
        agent = load_checkpoint_agent(arg, rules)
        return agent
    if name == "pretrained":
        names = pretrained_names()
        if arg not in names:
            raise AgentSpecError(f"unknown pretrained agent {arg!r}; shipped: {', '.join(names) or 'none'}")
        from agents.ppo_agent import load_checkpoint_agent  # lazily: imports torch

        agent = load_checkpoint_agent(str(PRETRAINED_DIR / f"{arg}.pt"), rules)
        agent.name = spec.strip()
        return agent
    if name in SEARCH_NAMES:
        from agents.pimc import PIMCAgent

        if not sep:
            return PIMCAgent(rules, name=spec.strip())
        try:
            sims = int(arg)
        except ValueError:
            sims = 0
        if sims < 1:
            raise AgentSpecError(f"{name}:N needs a positive number of simulations, got {excerpt(arg)}")
        return PIMCAgent(rules, simulations=sims, name=spec.strip())
    if sep:
        raise AgentSpecError(f"agent {name!r} takes no argument (got {spec!r})")
    from agents.bots import make_bot

    try:
        return make_bot(name, rules)
    except ValueError:
        raise AgentSpecError(f"unknown agent {spec!r}; agents are {', '.join(BOT_NAMES)}, pimc:N (or ismcts:N)"
                             f", checkpoint:PATH, pretrained:NAME, policy:SPEC, endgame:SPEC and MODULE:OBJECT "
                             f"(your own, an import path); ladder stands for {', '.join(LADDER)}") from None


def _import(module: str, spec: str) -> object:
    """``import module``, from ``sys.path``, else from the current folder (as ``python -m`` would find it); a module
    that is not there is an AgentSpecError naming it. Errors inside the module itself propagate unchanged."""
    try:
        return importlib.import_module(module)
    except ModuleNotFoundError as exc:
        parents = {module.rsplit(".", k)[0] for k in range(module.count(".") + 1)}
        cwd = os.getcwd()
        if exc.name not in parents:
            raise  # the module was found; something it imports is missing
        if cwd in sys.path or "" in sys.path:
            raise AgentSpecError(f"agent {spec!r}: no module named {exc.name!r} (searched sys.path and the current "
                                 f"folder {cwd})") from None
    sys.path.append(cwd)  # the current folder, searched after everything else
    try:
        return importlib.import_module(module)
    except ModuleNotFoundError as exc:
        if exc.name not in parents:
            raise
        raise AgentSpecError(f"agent {spec!r}: no module named {exc.name!r} (searched sys.path and the current "
                             f"folder {cwd})") from None


def load_agent(spec: str, rules: RuleSet) -> Agent:
    """Your own agent from an import path ``MODULE:OBJECT`` (``mypkg.mybot:MyBot``): ``OBJECT`` (a class, a
    function, or a dotted attribute path such as ``Bots.make``) of module ``MODULE`` is called with the RuleSet,
    ``OBJECT(rules)``, and must return an object following :class:`agents.base.Agent`: an ``act(obs, rng)`` method
    returning one legal move index per game. Its ``name`` is set to ``spec`` when it has none. ``MODULE`` is found
    on ``sys.path``, else in the current folder.

    >>> from cassino_env.rules import make_rules
    >>> load_agent("agents.pimc:PIMCAgent", make_rules("classic")).name  # the class of the pimc bot
    'pimc'
    >>> load_agent("agents.nosuchbot:Bot", make_rules("classic"))
    Traceback (most recent call last):
    ...
    agents.registry.AgentSpecError: agent 'agents.nosuchbot:Bot': no module named 'agents.nosuchbot' (searched ...)

    Raises:
        AgentSpecError: naming the spec: no such module or attribute, an object that cannot be called with one
            argument (the RuleSet), or a result without an ``act`` method or with a ``name`` that is not text.
    """
    module, _, attr = spec.partition(":")
    if not module or not attr or not all(part.isidentifier() for part in (*module.split("."), *attr.split("."))):
        raise AgentSpecError(f"agent {spec!r}: an import path is MODULE:OBJECT (mypkg.mybot:MyBot); agents are "
                             f"also {', '.join(BOT_NAMES)}, pimc:N, checkpoint:PATH, pretrained:NAME, policy:SPEC "
                             f"and endgame:SPEC")
    obj: object = _import(module, spec)
    for part in attr.split("."):
        try:
            obj = getattr(obj, part)
        except AttributeError:
            raise AgentSpecError(f"agent {spec!r}: {module} has no attribute {attr!r}") from None
    if not callable(obj):
        raise AgentSpecError(f"agent {spec!r}: {attr} is a {type(obj).__name__}, not a class or factory")
    try:
        inspect.signature(obj).bind(rules)
    except TypeError as exc:
        raise AgentSpecError(f"agent {spec!r}: {attr} must take one argument, the RuleSet ({exc})") from None
    except ValueError:  # no signature to inspect (some builtins): call it and see
        pass
    agent = obj(rules)
    if not callable(getattr(agent, "act", None)):
        raise AgentSpecError(f"agent {spec!r}: {attr}(rules) returned a {type(agent).__name__} without an "
                             "act(obs, rng) method (agents.base.Agent)")
    if getattr(agent, "name", None) is None:
        try:
            agent.name = spec
        except AttributeError:
            raise AgentSpecError(f"agent {spec!r}: the agent has no name and takes none (agents.base.Agent: a "
                                 "name attribute)") from None
    elif not isinstance(agent.name, str):
        raise AgentSpecError(f"agent {spec!r}: its name must be text, got {type(agent.name).__name__}")
    return agent


def expand_specs(specs: Sequence[_Spec]) -> list[_Spec | str]:
    """``specs`` with each ``ladder`` replaced by the bots of :data:`LADDER`, in order; anything else (another spec,
    an Agent object) keeps its place."""
    out: list[_Spec | str] = []
    for s in specs:
        if isinstance(s, str) and s.strip() == "ladder":
            out.extend(LADDER)
        else:
            out.append(s)
    return out
