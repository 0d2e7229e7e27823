"""Policies and bots that play cassino: networks, scripted baselines and search players.

Importable (unlike CleanRL's single-file scripts) so that training, self-play, evaluation and ``cassino play`` share
one definition of each agent.
"""

import os

# torch's OpenMP threads spin while they wait for work by default. On shared cores (CI, laptops, other jobs) that
# slowed training five-fold and a network agent's evaluation about nine-fold in our measurements, while passive
# waiting cost nothing measurable. It counts only if set before torch loads its OpenMP runtime, so it is set here,
# where every module that loads torch for a network (agents.policy, agents.ppo_agent, and through agents.registry
# train.ppo_selfplay and its Ray workers) passes first. An OMP_WAIT_POLICY of your own wins.
os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")
