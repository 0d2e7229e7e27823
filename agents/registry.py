"""Agents by name: one string spec per agent, as the ``eval`` and ``play`` commands take them.

==================  ==========================================================================================
spec                agent
==================  ==========================================================================================
``random``          uniformly random legal moves (:class:`agents.bots.RandomBot`)
``greedy``          the move that scores most now (:mod:`agents.bots`)
``beginner``        hand-written strategies of increasing strength (:mod:`agents.bots`)
``intermediate``
``advanced``
``ismcts``          determinised Monte-Carlo search at its default budget (:mod:`agents.ismcts`)
``ismcts:N``        the same with N simulations (rollouts) per decision
``checkpoint:PATH`` a trained policy (``agents.ppo_agent.load_checkpoint_agent``; torch is imported only then)
==================  ==========================================================================================

>>> from cassino_env.rules import make_rules
>>> make_agent("greedy", make_rules("classic")).name
'greedy'
>>> make_agent("ismcts:64", make_rules("classic")).name
'ismcts:64'
"""

from __future__ import annotations

from agents.base import Agent
from cassino_env.rules import RuleSet

#: The names of the agents that need no argument, in ladder order (``ismcts`` takes an optional budget).
BOT_NAMES = ("random", "greedy", "beginner", "intermediate", "advanced", "ismcts")


class AgentSpecError(ValueError):
    """An agent spec that names no agent, or a bad argument (the message says which and lists the specs)."""


def make_agent(spec: str, rules: RuleSet) -> Agent:
    """The agent named by ``spec`` (see the module table) for ``rules``; its ``name`` is the spec.

    Raises:
        AgentSpecError: an unknown name or a bad argument.
        agents.ppo_agent.CheckpointError: a checkpoint that cannot be loaded for ``rules`` (names file and problem).
    """
    name, sep, arg = spec.strip().partition(":")
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
    if name == "ismcts":
        from agents.ismcts import ISMCTSAgent

        if not sep:
            return ISMCTSAgent(rules)
        try:
            sims = int(arg)
        except ValueError:
            sims = 0
        if sims < 1:
            raise AgentSpecError(f"ismcts:N needs a positive number of simulations, got {arg!r}")
        return ISMCTSAgent(rules, simulations=sims, name=spec.strip())
    if sep:
        raise AgentSpecError(f"agent {name!r} takes no argument (got {spec!r})")
    from agents.bots import make_bot

    try:
        return make_bot(name, rules)
    except ValueError:
        raise AgentSpecError(f"unknown agent {spec!r}; agents are {', '.join(BOT_NAMES)}, ismcts:N and "
                             f"checkpoint:PATH") from None
