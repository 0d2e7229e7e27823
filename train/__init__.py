"""Training, evaluation and the front ends, over :mod:`agents` and :mod:`cassino_env` (dependencies run one way, and
no two modules here import each other: tests/test_layering.py checks).

By concern:

* **Trainers**, one per algorithm in the CleanRL manner: ``ppo_selfplay`` (self-play PPO: the loop and the PPO
  update) and ``expert/`` (expert iteration, ``cassino exit``; ``exit`` is its old name, re-exporting it), with
  ``recipe`` (``cassino train``) running them as stages through their per-iteration hooks. ``run`` holds the PPO
  loop's phases (set-up and resume, collect, logs, evaluations during training, checkpoints, the summary); of it
  expert iteration and the recipe take only the stop errors, ``fmt_time`` and the evaluation after training. Their
  options are ``config`` (``Args`` and the rule of each field, ``ARG_RULES``; YAML configs, the command line, the run
  folder and its lock; re-exported from ``options``, ``ppo_args`` and ``run_folder``).
* **Rollouts**: ``rollout`` (the games, the opponents and the snapshot pool, per-seat credit and GAE, the state of
  the games and generators a checkpoint keeps), ``ray_rollouts`` (the same rollouts on Ray actors), ``ray_pool``
  (the Ray actors of a run with one CPU each reserved, for rollouts and labels alike), ``ray_cluster`` (the
  connection to a Ray cluster, for training and evaluation), ``match_value`` (the match objective's values),
  ``checkpoints`` (a training checkpoint's state: written, read and checked to resume).
* **Evaluation**: ``arena`` (the one game loop of every evaluation), ``evaluate`` (``cassino eval``), ``stats`` and
  ``report`` (intervals, ratings, tables), ``exploit`` (the exploitability probe), ``proxy``, ``plot`` (learning
  curves).
* **Front ends**: ``cli`` (the ``cassino`` command), ``errors`` (bad input as one ``error:`` line and exit 2, for
  every command), ``docs`` (``cassino docs``: the rules and formats of an installed copy), ``play`` (the terminal
  game), ``serve`` and ``web/`` (the web app), ``records`` (game records, ``cassino replay``), ``example_*`` (other
  RL libraries on these envs).
"""
