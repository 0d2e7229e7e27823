"""Agents by name: one table of every agent spec, from which everything that lists or builds agents is derived.

An agent spec is a string: a bare name (``greedy``), a name with an argument (``pimc:64``, ``checkpoint:PATH``,
``endgame:SPEC``), or an import path ``MODULE:OBJECT`` (your own agent, :func:`load_agent`). The table
(:data:`ENTRIES`, one :class:`Entry` per name, filled by :func:`register`) gives each name its factory, its ladder
rank and a one-line description; :data:`LADDER`, :data:`BOT_NAMES`, :func:`make_bot`, the error texts,
the command-line help lists (:func:`agent_help`) and the table of docs/bots.md (:func:`markdown_table`) all come from
it. Every command and API that takes an agent spec (``cassino eval``/``play``/``exploit``/``serve``, the trainer's
``bot_rates`` and evaluation lists, the Gymnasium env's opponents) builds it with :func:`make_agent` and checks it with
:func:`parse_spec`.

The table itself is in docs/bots.md (generated from :data:`ENTRIES`) and in ``python -m agents.registry``'s output.

In an agent list, ``ladder`` stands for the bots of :data:`LADDER` (:func:`expand_specs`).

**Budgets** (``pimc:N``) are read by one strict parser, :func:`parse_count`: ASCII digits only (no sign, spaces,
``_`` or other digits), within the entry's cap (:data:`MAX_SIMULATIONS` for ``pimc``); only the trailing budget of
``search:SPEC[:N]`` is read by the search itself (:func:`agents.search.parse_search_arg`: ASCII digits, 1 to
:data:`MAX_SIMULATIONS`). **Nesting** of specs that wrap a spec (``endgame:``, ``policy:``) is bounded by
:data:`MAX_NESTING` and parsed without recursion.

**Adding a bot**: write it (a class with ``act(obs, rng)``, :class:`agents.base.Agent`) and register it, e.g. at the
end of the built-in entries below::

    register_bot("mybot", lambda rules: MyBot(rules), "what it does, in one line", rank=LADDER_RANK_STEP * 6)

``rank`` places it on the ladder (weakest first; None: not on it). ``cassino eval --help`` and the other commands'
help list it; ``python -m agents.registry --write-docs`` refreshes docs/bots.md (tests/test_registry.py checks it).

>>> from cassino_env.rules import make_rules
>>> make_agent("greedy", make_rules("classic")).name
'greedy'
>>> make_agent("pimc:64", make_rules("classic")).name
'pimc:64'
>>> make_agent("ismcts:64", make_rules("classic")).name  # the alias: the same agent, named as asked
'ismcts:64'
>>> expand_specs(["checkpoint:x.pt", "ladder"])
['checkpoint:x.pt', 'random', 'greedy', 'beginner', 'intermediate', 'advanced']
>>> parse_count("+5", what="pimc:N", cap=100)
Traceback (most recent call last):
...
agents.registry.AgentSpecError: pimc:N needs a positive number of at most 100, in digits 0-9 only ..., got '+5'
"""

from __future__ import annotations

import importlib
import inspect
import os
import re
import sys
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TypeVar

from agents.base import MAX_SIMULATIONS, Agent
from cassino_env.errors import excerpt
from cassino_env.rules import PRESETS, RuleSet

_Spec = TypeVar("_Spec")

#: The folder of the shipped checkpoints (``pretrained:NAME`` is ``PRETRAINED_DIR / f"{NAME}.pt"``).
PRETRAINED_DIR = Path(__file__).resolve().parent / "pretrained"
#: The most specs one spec may wrap (``endgame:policy:pretrained:classic`` wraps two): deeper is an AgentSpecError.
MAX_NESTING = 8
#: The longest agent spec, in characters (a long checkpoint path fits).
MAX_SPEC_CHARS = 4096
#: Ladder ranks of the built-in bots are multiples of this, so a bot can go between two of them.
LADDER_RANK_STEP = 10


def pretrained_names() -> tuple[str, ...]:
    """The names ``pretrained:NAME`` accepts: one per shipped checkpoint file, sorted."""
    return tuple(sorted(p.stem for p in PRETRAINED_DIR.glob("*.pt")))


class AgentSpecError(ValueError):
    """An agent spec that names no agent, or a bad argument (the message says which and lists the specs)."""


class UnknownAgentError(AgentSpecError):
    """A spec whose name is not in the table and that is no import path ``MODULE:OBJECT`` either."""


# --- the one strict integer parser --------------------------------------------------------------------------------

_DIGITS = re.compile(r"[0-9]+")


def parse_count(text: object, *, what: str, cap: int, low: int = 1) -> int:
    """A budget or count written in a spec: ASCII digits ``0-9`` only (no sign, spaces, ``_``, other scripts'
    digits), ``low <= n <= cap``. :func:`parse_spec` reads the ``N`` of every entry that takes one (``pimc:N``,
    ``ismcts:N``) with it, for the commands and the web app alike; ``search:SPEC[:N]``'s budget is text to its entry
    and is read by :func:`agents.search.parse_search_arg`.

    Raises:
        AgentSpecError: naming ``what`` and the range, quoting an excerpt of ``text``.
    """
    size = "a positive number" if low == 1 else f"a number of at least {low}"
    rule = f"{what} needs {size} of at most {cap}, in digits 0-9 only (no sign, spaces or _), got {excerpt(text)}"
    if not isinstance(text, str) or not _DIGITS.fullmatch(text) or len(text.lstrip("0")) > len(str(cap)):
        raise AgentSpecError(rule)
    n = int(text)
    if not low <= n <= cap:
        raise AgentSpecError(rule)
    return n


# --- the table -----------------------------------------------------------------------------------------------------

#: What an entry's argument is: none (a bare name), an integer budget, an agent spec it wraps, or text.
TAKES = (None, "int", "spec", "text")


@dataclass(frozen=True)
class Entry:
    """One name of the agent table.

    Attributes:
        name: the spec's name (``greedy``, ``pimc``, ``endgame``).
        make: ``make(rules, arg, spec) -> Agent``: ``arg`` is None for ``takes=None`` (and for ``takes="int"`` when
            the spec has no ``:N``), the parsed budget for ``"int"``, the inner Agent (already built) for
            ``"spec"``, the text after the colon for ``"text"``; ``spec`` is the whole spec, stripped.
        description: one line for help texts and docs/bots.md.
        takes: None, ``"int"``, ``"spec"`` or ``"text"`` (:data:`TAKES`).
        arg_required: the argument must be given (``checkpoint:PATH``); otherwise ``name`` alone works too.
        cap: the largest budget (``takes="int"``).
        rank: the ladder position (smaller is weaker; None: not on the ladder).
        arg_name: how help texts write the argument (``N``, ``PATH``, ``NAME``, ``SPEC``).
        inner: for ``takes="spec"``: the names the wrapped spec may start with (empty: any agent).
        alias_of: the entry this name is another name of (help texts list it beside that one).
        check: for ``takes="text"``: ``check(arg)`` raises AgentSpecError for an argument the entry refuses, read
            without building anything (no file read), so that :func:`parse_spec` refuses it (None: any text).
    """

    name: str
    make: Callable[[RuleSet, Any, str], Agent]
    description: str
    takes: str | None = None
    arg_required: bool = False
    cap: int | None = None
    rank: int | None = None
    arg_name: str = ""
    inner: tuple[str, ...] = ()
    alias_of: str | None = None
    check: Callable[[str], None] | None = None

    @property
    def syntax(self) -> str:
        """The spec as help texts write it: ``greedy``, ``pimc[:N]``, ``checkpoint:PATH``."""
        if self.takes is None:
            return self.name
        arg = self.arg_name or {"int": "N", "spec": "SPEC", "text": "ARG"}[self.takes]
        return f"{self.name}:{arg}" if self.arg_required else f"{self.name}[:{arg}]"

    @property
    def bare(self) -> bool:
        """True when the name alone is a spec (a bot): no argument, or an optional one."""
        return not self.arg_required


#: The agent table: name -> :class:`Entry`, in the order help texts list them (:func:`register` adds to it).
ENTRIES: dict[str, Entry] = {}

_NAME = re.compile(r"[a-z][a-z0-9_-]*")


def register(entry: Entry, *, replace: bool = False) -> Entry:
    """Add ``entry`` to :data:`ENTRIES` (the name must be new unless ``replace``); returns it.

    Raises:
        ValueError: a name that is not lower-case ``[a-z][a-z0-9_-]*`` or is taken, an unknown ``takes``, an
            ``int`` entry without a cap, or an ``alias_of`` that is not registered.
    """
    if not isinstance(entry.name, str) or not _NAME.fullmatch(entry.name) or entry.name == "ladder":
        raise ValueError(f"an agent name is lower-case letters, digits, - and _, starting with a letter, and not "
                         f"'ladder'; got {entry.name!r}")
    if entry.name in ENTRIES and not replace:
        raise ValueError(f"agent name {entry.name!r} is registered already")
    if entry.takes not in TAKES:
        raise ValueError(f"takes must be one of {TAKES}, got {entry.takes!r}")
    if entry.takes == "int" and (not isinstance(entry.cap, int) or entry.cap < 1):
        raise ValueError(f"{entry.name}: an entry that takes N needs a cap (a positive int)")
    if entry.takes is None and entry.arg_required:
        raise ValueError(f"{entry.name}: arg_required needs an argument (takes)")
    if entry.alias_of is not None and entry.alias_of not in ENTRIES:
        raise ValueError(f"{entry.name}: alias_of {entry.alias_of!r} is not registered")
    if not isinstance(entry.description, str) or "\n" in entry.description or not entry.description.strip():
        raise ValueError(f"{entry.name}: the description is one line of text")
    ENTRIES[entry.name] = entry
    return entry


def register_bot(name: str, factory: Callable[[RuleSet], Agent], description: str, *, rank: int | None = None,
                 replace: bool = False) -> Entry:
    """Register a bot: a spec that is a bare name, built by ``factory(rules)``; its agent is named ``name``.

    Args:
        name: the spec (lower-case).
        factory: the RuleSet -> a new :class:`agents.base.Agent`.
        description: one line for help texts and docs/bots.md.
        rank: its place on the ladder, weakest first (the built-in bots are 0, 10, ..., 40:
            :data:`LADDER_RANK_STEP`); None: not on the ladder.
        replace: replace a bot registered under that name.
    """
    def make(rules: RuleSet, arg: Any, spec: str) -> Agent:  # noqa: ARG001 - a bot takes no argument
        agent = factory(rules)
        _set_name(agent, name)
        return agent

    return register(Entry(name, make, description, rank=rank), replace=replace)


def unregister(name: str) -> None:
    """Remove ``name`` (and its aliases) from the table (a bot registered for a test or a session)."""
    ENTRIES.pop(name, None)
    for alias in [e.name for e in ENTRIES.values() if e.alias_of == name]:
        ENTRIES.pop(alias)


def _set_name(agent: Any, name: str) -> None:
    try:
        agent.name = name
    except AttributeError:  # a read-only name: the agent keeps its own
        pass


def ladder() -> tuple[str, ...]:
    """The bot ladder, weakest first: the entries with a rank, by rank (ties: the order of the table)."""
    ranked = [e for e in ENTRIES.values() if e.rank is not None]
    return tuple(e.name for e in sorted(ranked, key=lambda e: e.rank))


def bot_names() -> tuple[str, ...]:
    """The names that are a spec alone: the ladder, then the other bots (``pimc``, ``ismcts``, ...)."""
    lad = ladder()
    return (*lad, *(e.name for e in ENTRIES.values() if e.bare and e.name not in lad))


def search_names() -> tuple[str, ...]:
    """``pimc`` and its aliases (both take ``:N``)."""
    return tuple(e.name for e in ENTRIES.values() if e.name == "pimc" or e.alias_of == "pimc")


def __getattr__(attr: str) -> Any:
    """:data:`LADDER`, :data:`BOT_NAMES`, :data:`SEARCH_NAMES` and :data:`BUILTIN_PREFIXES`, computed from the table
    when read (a bot registered later is in them)."""
    if attr == "LADDER":
        return ladder()
    if attr == "BOT_NAMES":
        return bot_names()
    if attr == "SEARCH_NAMES":
        return search_names()
    if attr == "BUILTIN_PREFIXES":
        return tuple(ENTRIES)
    raise AttributeError(f"module {__name__!r} has no attribute {attr!r}")


# --- parsing -------------------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class ParsedSpec:
    """An agent spec, checked but not built (:func:`parse_spec`).

    Attributes:
        spec: the spec, stripped.
        name: its name (``pimc``), or the module of an import path.
        entry: its table entry; None for an import path ``MODULE:OBJECT``.
        arg: the text after the first colon ("" when none).
        budget: the parsed ``N`` of an ``int`` entry (None when not given).
        inner: the wrapped spec of a ``spec`` entry (``endgame:SPEC``).
    """

    spec: str
    name: str
    entry: Entry | None
    arg: str
    budget: int | None = None
    inner: ParsedSpec | None = None

    def chain(self) -> list[ParsedSpec]:
        """This spec, then each spec it wraps, outermost first."""
        out, node = [], self
        while node is not None:
            out.append(node)
            node = node.inner
        return out


def spec_summary(*, ladder_ok: bool = False) -> str:
    """The specs in one sentence, from the table, for help and error texts; with ``ladder_ok`` (the texts of an
    agent list, where ``ladder`` is taken: :func:`expand_specs`) it says what ``ladder`` stands for."""
    lad = ladder()
    parts = [", ".join(lad) + " (the bot ladder, weakest first)"] if lad else []
    for e in ENTRIES.values():
        if e.name in lad or e.alias_of is not None:
            continue
        aliases = [a.syntax for a in ENTRIES.values() if a.alias_of == e.name]
        parts.append(e.syntax + (f" (or {', '.join(aliases)})" if aliases else ""))
    parts.append("MODULE:OBJECT (your own agent, an import path)")
    return ", ".join(parts) + (f"; ladder stands for {', '.join(lad) or 'no bot'}" if ladder_ok else "")


def make_bot(name: str, rules: RuleSet) -> Agent:
    """A bot by name: any spec of the table that is a name alone, as :data:`BOT_NAMES` lists them (``random``,
    ``greedy``, ``beginner``, ``intermediate``, ``advanced``, ``pimc``, a bot registered since, ...).
    (:func:`agents.bots.make_bot` makes the scripted bots of :mod:`agents.bots` alone, without the table.)

    Raises:
        UnknownAgentError: for another name (a ValueError; the message lists the bots).
    """
    entry = ENTRIES.get(name) if isinstance(name, str) else None
    if entry is None or not entry.bare:
        raise UnknownAgentError(f"unknown bot {excerpt(name)}; bots are {', '.join(bot_names())}")
    return entry.make(rules, None, name)


def _unknown(spec: str, ladder_ok: bool) -> AgentSpecError:
    if spec == "ladder" and not ladder_ok:  # several agents, where one is asked for
        return UnknownAgentError(f"unknown agent 'ladder': ladder stands for several bots and is only for a list of "
                                 f"agents (cassino eval --agents); name one agent: {spec_summary()}")
    return UnknownAgentError(f"unknown agent {excerpt(spec)}; agents are {spec_summary(ladder_ok=ladder_ok)}")


def parse_spec(spec: object, *, ladder_ok: bool = False) -> ParsedSpec:
    """Check an agent spec without building it (no import, no file read): its names, arguments, budgets and
    nesting. ``ladder_ok``: the caller takes ``ladder`` in place of a spec (an agent list, :func:`expand_specs`), so
    an unknown name's message says what ``ladder`` stands for; ``ladder`` itself is no spec here either way.

    Raises:
        AgentSpecError: not a string, longer than :data:`MAX_SPEC_CHARS`, an unknown name, a missing or unexpected
            argument, a budget :func:`parse_count` refuses, a wrapped spec an entry does not take, nesting deeper
            than :data:`MAX_NESTING`, an import path that is not ``MODULE:OBJECT`` of identifiers, an argument the
            entry's ``check`` refuses (``search:SPEC[:N]`` whose SPEC is not a network's spec).
    """
    if not isinstance(spec, str):
        raise AgentSpecError(f"an agent spec is a string such as 'greedy' or 'pimc:64', got {type(spec).__name__} "
                             f"{excerpt(spec)}")
    if len(spec) > MAX_SPEC_CHARS:
        raise AgentSpecError(f"an agent spec is at most {MAX_SPEC_CHARS} characters, got {len(spec):,}: "
                             f"{excerpt(spec)}")
    text = spec.strip()
    nodes: list[tuple[str, str, Entry | None, str, int | None]] = []
    while True:
        name, sep, arg = text.partition(":")
        entry = ENTRIES.get(name)
        if len(nodes) > MAX_NESTING:
            raise AgentSpecError(f"agent spec {excerpt(spec)}: specs nest at most {MAX_NESTING} deep "
                                 f"({', '.join(e.syntax for e in ENTRIES.values() if e.takes == 'spec')})")
        outer = nodes[-1][2] if nodes else None
        if outer is not None and outer.inner and name not in outer.inner:
            raise AgentSpecError(f"{outer.syntax} plays a trained network alone: SPEC is "
                                 f"{' or '.join(ENTRIES[n].syntax for n in outer.inner if n in ENTRIES)}, got "
                                 f"{excerpt(text)}")
        if entry is None:
            if not sep:
                raise _unknown(text, ladder_ok and not nodes)
            _check_import_path(text, ladder_ok and not nodes)
            nodes.append((text, name, None, arg, None))
            break
        budget = None
        if entry.takes is None:
            if sep:
                raise AgentSpecError(f"agent {name!r} takes no argument (got {excerpt(text)})")
        elif not sep:
            if entry.arg_required:
                what = "an agent spec" if entry.takes == "spec" else "an argument"
                raise AgentSpecError(f"{name} needs {what}: {entry.syntax}")
        elif entry.takes == "int":
            budget = parse_count(arg, what=f"{name}:N", cap=entry.cap)
        elif not arg.strip():
            what = "an agent spec" if entry.takes == "spec" else "an argument"
            raise AgentSpecError(f"{name} needs {what}: {entry.syntax}")
        elif entry.takes == "text" and entry.check is not None:
            entry.check(arg)
        nodes.append((text, name, entry, arg, budget))
        if entry.takes != "spec" or not sep:
            break
        text = arg.strip()
    node: ParsedSpec | None = None
    for text, name, entry, arg, budget in reversed(nodes):
        node = ParsedSpec(text, name, entry, arg, budget, node)
    assert node is not None
    return node


def _check_import_path(spec: str, ladder_ok: bool = False) -> None:
    module, _, attr = spec.partition(":")
    if not module or not attr or not all(part.isidentifier() for part in (*module.split("."), *attr.split("."))):
        raise UnknownAgentError(f"agent {excerpt(spec)}: not a known agent, and an import path is MODULE:OBJECT "
                                f"(mypkg.mybot:MyBot); agents are {spec_summary(ladder_ok=ladder_ok)}")


def check_spec(spec: object, *, ladder_ok: bool = False) -> None:
    """:func:`parse_spec`, and ``ladder`` too when ``ladder_ok`` (an entry of an agent list); the trainer's option
    check. Raises AgentSpecError as :func:`parse_spec` does."""
    if ladder_ok and isinstance(spec, str) and spec.strip() == "ladder":
        return
    parse_spec(spec, ladder_ok=ladder_ok)


# --- building ------------------------------------------------------------------------------------------------------


def make_agent(spec: str, rules: RuleSet, *, ladder_ok: bool = False, device: str | None = None) -> Agent:
    """The agent named by ``spec`` (see the module table) for ``rules``; its ``name`` is the spec (a checkpoint's is
    ``checkpoint:PATH`` with PATH relative to the current folder, :func:`agents.ppo_agent.checkpoint_name`): a name
    printed in a report is a spec that builds the same agent. ``ladder_ok``: as :func:`parse_spec` (a spec of an
    agent list: an unknown name's message says what ``ladder`` stands for). ``device``: where a trained network
    runs (a name of :mod:`agents.device`: ``auto``, ``cpu``, ``cuda``, ``cuda:N``, ``mps``; None: the CPU): the
    built-in agents that hold one (``checkpoint:``, ``pretrained:``, ``search:``, and what wraps them) are moved
    there; the bots and the searches' rollouts run on the CPU, and an import path's agent is left as it builds.

    Raises:
        agents.device.DeviceError: a device that is not a device name or that torch cannot see (checked first).
        AgentSpecError: as :func:`parse_spec`, an unknown pretrained name, or an import path that yields no agent
            (:func:`load_agent`).
        agents.ppo_agent.CheckpointError: a checkpoint that cannot be loaded for ``rules`` (names file and problem).
    """
    if device is not None:
        from agents.device import check_device

        device = check_device(device)  # torch is imported only for a GPU's name
    parsed = parse_spec(spec, ladder_ok=ladder_ok)
    chain = parsed.chain()
    leaf = chain[-1]
    if leaf.entry is None:
        agent = load_agent(leaf.spec, rules)
    else:
        agent = leaf.entry.make(rules, leaf.budget if leaf.entry.takes == "int" else (leaf.arg or None), leaf.spec)
        if device is not None and callable(getattr(agent, "to", None)):  # a network's agent (PPOAgent, SearchAgent)
            agent.to(device)
    for node in reversed(chain[:-1]):
        agent = node.entry.make(rules, agent, node.spec)
    return agent


# The built-in entries. Factories import their modules when called: this module stays light (no numba, no torch).

def _scripted(name: str) -> Callable[[RuleSet], Agent]:
    def factory(rules: RuleSet) -> Agent:
        from agents.bots import ScriptedBot

        return ScriptedBot(name, rules)

    return factory


def _random(rules: RuleSet) -> Agent:  # noqa: ARG001 - any rules
    from agents.bots import RandomBot

    return RandomBot()


def _pimc(rules: RuleSet, sims: int | None, spec: str) -> Agent:
    from agents.pimc import PIMCAgent

    return PIMCAgent(rules, name=spec) if sims is None else PIMCAgent(rules, simulations=sims, name=spec)


def _checkpoint(rules: RuleSet, path: str, spec: str) -> Agent:  # noqa: ARG001 - named checkpoint:PATH
    try:
        from agents.ppo_agent import load_checkpoint_agent  # lazily: imports torch
    except ImportError as exc:
        raise AgentSpecError(f"checkpoint agents need agents/ppo_agent.py (load_checkpoint_agent) and torch: "
                             f"{exc}") from exc
    return load_checkpoint_agent(path, rules)


def _check_pretrained(name: str) -> None:
    """pretrained:NAME's name: one of the shipped checkpoints (:func:`pretrained_names`; no file is read)."""
    names = pretrained_names()
    if name not in names:
        raise AgentSpecError(f"unknown pretrained agent {excerpt(name)}; shipped: {', '.join(names) or 'none'}")


def _pretrained(rules: RuleSet, name: str, spec: str) -> Agent:
    _check_pretrained(name)
    agent = _checkpoint(rules, str(PRETRAINED_DIR / f"{name}.pt"), spec)
    agent.name = spec
    return agent


def _policy(rules: RuleSet, inner: Agent, spec: str) -> Agent:  # noqa: ARG001
    inner.endgame = False  # a PPOAgent: checkpoint and pretrained specs make one
    inner.name = spec
    return inner


def _endgame(rules: RuleSet, inner: Agent, spec: str) -> Agent:
    from agents.endgame import EndgameAgent

    if spec.partition(":")[2].strip().partition(":")[0] in ("checkpoint", "pretrained", "endgame"):
        inner.name = spec  # it plays the last round exactly already: solve once
        return inner
    return EndgameAgent(inner, rules, name=spec)


register_bot("random", _random, "a uniformly random legal move", rank=0)
register_bot("greedy", _scripted("greedy"), "the move that scores most now (it never builds)", rank=10)
register_bot("beginner", _scripted("beginner"), "greedy, but trails its least valuable card and avoids leaving a "
             "possible sweep", rank=20)
register_bot("intermediate", _scripted("intermediate"), "also builds to collect, protects and steals builds, weighs "
             "the sweep risk by a rough chance", rank=30)
register_bot("advanced", _scripted("advanced"), "intermediate plus card tracking: exact chances, the opponent's "
             "expected take, keeps cards that capture valuable unseen cards", rank=40)
register(Entry("pimc", _pimc, "flat Monte Carlo over determinisations, N rollouts per decision (default 4000; "
               "slow, so not on the ladder)", takes="int", cap=MAX_SIMULATIONS))
register(Entry("ismcts", _pimc, "the pimc agent under its first name", takes="int", cap=MAX_SIMULATIONS,
               alias_of="pimc"))
register(Entry("checkpoint", _checkpoint, "a trained policy from a checkpoint file of cassino train (torch), with "
               "the exact last round of a two-seat deal", takes="text", arg_required=True, arg_name="PATH"))
register(Entry("pretrained", _pretrained, "a checkpoint shipped with the package, agents/pretrained/NAME.pt "
               "(classic, classic-4p, ...), as checkpoint:", takes="text", arg_required=True, arg_name="NAME",
               check=_check_pretrained))
register(Entry("policy", _policy, "the network alone of SPEC (checkpoint:PATH or pretrained:NAME): every move from "
               "the policy, the last round too", takes="spec", arg_required=True, inner=("checkpoint", "pretrained")))
register(Entry("endgame", _endgame, "any agent with the exact last round of a two-seat deal (endgame:advanced)",
               takes="spec", arg_required=True))
# --- search (helper SRCH) ---
def _search(rules: RuleSet, arg: str, spec: str) -> Agent:
    from agents.search import SearchSpecError, make_search_agent

    try:
        return make_search_agent(rules, arg, make_agent, name=spec)  # the table builds the network search wraps
    except SearchSpecError as exc:
        raise AgentSpecError(str(exc)) from None


def _check_search(arg: str) -> None:
    """search:ARG's form: ``SPEC[:N]`` with a budget in range and SPEC a network's spec the registry takes."""
    from agents.search import MAX_SIMULATIONS, SearchSpecError, parse_search_arg

    try:
        spec, _ = parse_search_arg(arg)
    except SearchSpecError as exc:
        raise AgentSpecError(str(exc)) from None
    # A budget that is not ASCII digits (-5, 1.5, +5, 1e3) stays in SPEC: named as the budget it was meant to be,
    # not as an unknown network. A shipped name holds no ':', so any text after one is a budget; a checkpoint path
    # may hold ':', so there only a number is.
    head, sep, tail = spec.rpartition(":")
    inner = head.removeprefix("policy:")
    if sep and ((inner.startswith("pretrained:") and ":" not in inner.removeprefix("pretrained:"))
                or (inner.startswith("checkpoint:") and _NUMBER_LIKE.fullmatch(tail))):
        raise AgentSpecError(f"search:SPEC:N needs a budget 1..{MAX_SIMULATIONS} rollouts per decision (ASCII "
                             f"digits), got {tail[:20]!r}")
    parse_spec(spec)  # pretrained:, checkpoint: or policy: (which wraps no search): no deeper than one level


#: Text that reads as a number but not as ASCII digits (a sign, a decimal point, an exponent).
_NUMBER_LIKE = re.compile(r"\s*[-+]?(\d[\d_]*(\.\d*)?|\.\d+)([eE][-+]?\d+)?\s*")


register(Entry("search", _search, "determinised search guided by a trained network (SPEC: pretrained:NAME or "
               "checkpoint:PATH; N rollouts per decision, default 4000, the time of pimc; docs/search.md)",
               takes="text", arg_required=True, arg_name="SPEC[:N]", check=_check_search))


# --- your own agents: import paths ---------------------------------------------------------------------------------

#: The attribute :func:`agent_factory` sets on a function it marks.
FACTORY_MARK = "__cassino_agent_factory__"


def agent_factory(fn: Callable[[RuleSet], Agent]) -> Callable[[RuleSet], Agent]:
    """Mark a function as an agent factory, so an import path ``MODULE:FUNCTION`` may call it with the RuleSet
    (:func:`load_agent`: a function is called only when marked). Returns ``fn`` itself."""
    setattr(fn, FACTORY_MARK, True)
    return fn


def _import(module: str, spec: str) -> object:
    """``import module``, from ``sys.path``, else from the current folder (as ``python -m`` would find it); a module
    that is not there is an AgentSpecError naming it. Errors inside the module itself propagate unchanged."""
    parents = {module.rsplit(".", k)[0] for k in range(module.count(".") + 1)}
    try:
        return importlib.import_module(module)
    except ModuleNotFoundError as exc:
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
    """Your own agent from an import path ``MODULE:OBJECT`` (``mypkg.mybot:MyBot``; ``OBJECT`` may be a dotted
    attribute path such as ``Bots.make``). ``MODULE`` is found on ``sys.path``, else in the current folder.

    What ``OBJECT`` may be (so that a spec never calls an arbitrary callable, ``os:system`` say, with the RuleSet):

    * a class with an ``act`` method (:class:`agents.base.Agent`): called with the RuleSet, ``OBJECT(rules)``;
    * a function marked with :func:`agent_factory`: called with the RuleSet;
    * an agent object (not a class) with an ``act`` method: used as it is.

    The result must have a callable ``act``; its ``name`` is set to ``spec`` when it has none.

    >>> from cassino_env.rules import make_rules
    >>> load_agent("agents.pimc:PIMCAgent", make_rules("classic")).name  # the class of the pimc bot
    'pimc'
    >>> load_agent("os:system", make_rules("classic"))
    Traceback (most recent call last):
    ...
    agents.registry.AgentSpecError: agent 'os:system': system is a builtin_function_or_method, not an agent class ...

    Raises:
        AgentSpecError: naming the spec: no such module or attribute, an object that is none of the above, a class
            or factory that cannot be called with one argument (the RuleSet), or a result without an ``act``
            method or with a ``name`` that is not text.
    """
    module, _, attr = spec.partition(":")
    _check_import_path(spec)
    obj: object = _import(module, spec)
    for part in attr.split("."):
        try:
            obj = getattr(obj, part)
        except AttributeError:
            raise AgentSpecError(f"agent {spec!r}: {module} has no attribute {attr!r}") from None
    is_class = inspect.isclass(obj)
    if is_class and callable(getattr(obj, "act", None)) or getattr(obj, FACTORY_MARK, False) is True:
        try:
            inspect.signature(obj).bind(rules)
        except TypeError as exc:
            raise AgentSpecError(f"agent {spec!r}: {attr} must take one argument, the RuleSet ({exc})") from None
        except ValueError:  # no signature to inspect: call it and see
            pass
        agent = obj(rules)
        made = f"{attr}(rules) returned a {type(agent).__name__}"
    elif not is_class and callable(getattr(obj, "act", None)):
        agent, made = obj, f"{attr} is a {type(obj).__name__}"
    else:
        what = "a class without an act method" if is_class else f"a {type(obj).__name__}"
        raise AgentSpecError(f"agent {spec!r}: {attr} is {what}, not an agent class (a class with act(obs, rng)), "
                             f"an agent object or a function marked @agents.registry.agent_factory")
    if not callable(getattr(agent, "act", None)):
        raise AgentSpecError(f"agent {spec!r}: {made} without an act(obs, rng) method (agents.base.Agent)")
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
    lad = ladder()
    for s in specs:
        if isinstance(s, str) and s.strip() == "ladder":
            out.extend(lad)
        else:
            out.append(s)
    return out


# --- derived texts: help and docs ----------------------------------------------------------------------------------


def markdown_table() -> str:
    """The agent table as Markdown (spec, ladder rank, description), from :data:`ENTRIES`: docs/bots.md's."""
    lad = ladder()
    rows = [("spec", "ladder", "agent")]
    for e in sorted(ENTRIES.values(), key=lambda e: (e.name not in lad, lad.index(e.name) if e.name in lad else 0)):
        desc = e.description if e.alias_of is None else f"{e.description} (as `{ENTRIES[e.alias_of].syntax}`)"
        rows.append((f"`{e.syntax}`", str(lad.index(e.name) + 1) if e.name in lad else "", desc))
    rows.append(("`MODULE:OBJECT`", "", "your own agent, an import path (`mypkg.mybot:MyBot`): a class with "
                 "`act(obs, rng)`, an agent object, or a function marked `@agent_factory` (`load_agent`)"))
    widths = [max(len(r[i]) for r in rows) for i in range(3)]

    def line(cells: tuple[str, ...]) -> str:
        return "| " + " | ".join(c.ljust(w) for c, w in zip(cells, widths, strict=True)) + " |"

    return "\n".join([line(rows[0]), "|" + "|".join("-" * (w + 2) for w in widths) + "|", *map(line, rows[1:])])


#: The attribute :func:`agent_help` keeps a help text's template in.
HELP_TEMPLATE = "__agent_help_template__"


def fill_help(text: str) -> str:
    """``text`` with ``{agent_specs}`` (:func:`spec_summary`: one agent), ``{agent_list_specs}`` (the same with what
    ``ladder`` stands for: an agent list), ``{ladder}`` and ``{bots}`` (:func:`bot_names`) filled in from the table,
    and ``{presets}`` from :data:`cassino_env.rules.PRESETS` (a command's ``--preset`` help)."""
    return (text.replace("{agent_list_specs}", spec_summary(ladder_ok=True)).replace("{agent_specs}", spec_summary())
            .replace("{ladder}", ", ".join(ladder())).replace("{bots}", ", ".join(bot_names()))
            .replace("{presets}", ", ".join(PRESETS)))


def agent_help(fn: Callable[..., Any]) -> Callable[..., Any]:
    """Fill a command's docstring (its ``--help``) from the table, now and again each time it is called for:
    keeps the template on ``fn`` (:data:`HELP_TEMPLATE`); the ``cassino`` command line refreshes it before it
    parses (so a bot registered since shows). Returns ``fn``."""
    template = getattr(fn, HELP_TEMPLATE, None) or fn.__doc__ or ""
    setattr(fn, HELP_TEMPLATE, template)
    fn.__doc__ = fill_help(template)
    return fn


#: The markers around the generated table in docs/bots.md.
DOC_BEGIN, DOC_END = "<!-- agent-table:begin (python -m agents.registry --write-docs) -->", "<!-- agent-table:end -->"


def docs_page_table(page: str) -> str:
    """``page`` (docs/bots.md's text) with the part between :data:`DOC_BEGIN` and :data:`DOC_END` replaced by
    :func:`markdown_table`.

    Raises:
        ValueError: the page lacks the markers.
    """
    head, sep, rest = page.partition(DOC_BEGIN)
    _, sep2, tail = rest.partition(DOC_END)
    if not sep or not sep2:
        raise ValueError(f"the page has no {DOC_BEGIN} ... {DOC_END} markers")
    return f"{head}{DOC_BEGIN}\n{markdown_table()}\n{DOC_END}{tail}"


def _main(argv: Sequence[str]) -> int:
    page = Path(__file__).resolve().parent.parent / "docs" / "bots.md"
    if list(argv) == ["--write-docs"]:
        page.write_text(docs_page_table(page.read_text(encoding="utf-8")), encoding="utf-8")
        print(f"wrote the agent table of {page}")
        return 0
    print(markdown_table())
    return 0


if __name__ == "__main__":
    raise SystemExit(_main(sys.argv[1:]))
