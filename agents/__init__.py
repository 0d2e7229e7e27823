"""Policies and bots that play cassino: networks, scripted baselines and search players.

Importable (unlike CleanRL's single-file scripts) so that training, self-play, evaluation and ``cassino play`` share
one definition of each agent.
"""
