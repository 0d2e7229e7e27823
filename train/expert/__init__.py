"""Expert iteration (Anthony, Tian & Barber 2017) for Cassino: a search labels every decision, the network learns it.

Usage::

    cassino exit                                     # configs/exit_classic.yaml: warm start from pretrained:classic
    cassino exit --config configs/exit_tiny.yaml     # a tiny run (seconds), as the tests run it
    cassino exit --iterations 40 --simulations 100 --target awr --temperature 0.5
    cassino exit --resume runs/RUN/checkpoints/latest.pt   # continue a run where it stopped
    cassino exit --ray auto --num-workers 4          # the labelling games on 4 Ray actors
    cassino plot RUN_DIR                             # its curve (eval/winrate_vs_advanced per iteration)

Options come from :class:`ExitArgs` (one documented field each); ``--config FILE`` reads a YAML file of the fields
that differ from its defaults (``configs/exit_classic.yaml`` when none is given) and every flag given overrides the
file, as ``cassino train`` does (:mod:`train.config`).

One iteration
-------------
1. **Games.** ``num_envs`` games are played for ``deals_per_iteration`` deals, all in one batch: self-play games (the
   current network plays every seat) and bot games at ``bot_rates`` (the network plays one side, rotating by deal,
   :func:`train.rollout.rotate_learner_side`; the split is :func:`train.rollout.split_games`'s). The
   network samples its moves (temperature 1), so the positions are the ones it reaches; with ``search_play`` > 0 it
   plays the search's best move instead in that share of its labelled decisions. With two seats the last round is
   played exactly by every seat (:func:`agents.endgame.play_endgame`, as the checkpoint agents play).
2. **Labels.** Every decision of the network's seats with more than one legal move is labelled with every legal
   move's value: in a two-seat last round exactly (``label_last_round``, :func:`train.proxy.exact_values`), elsewhere
   by the search, all the decisions of a move number at once (one
   batched search per ply over every game): ``search`` names it, ``pimc`` (:class:`agents.pimc.PIMCAgent`, flat
   Monte Carlo over sampled deals with ``rollout`` bot rollouts, ``simulations`` per decision) or ``search``
   (:class:`agents.search.SearchAgent` over the current network, rebuilt each iteration: its ``top_k`` most probable
   moves on ``simulations`` sampled lines of ``rollout`` play, scored by the network's critic after
   :data:`agents.search.DEFAULT_DEPTH` plies with two sides; the moves it does not search get the lowest searched
   value less :data:`UNSEARCHED_GAP`, :func:`searched_values`), which is expert iteration proper. A value is points of
   deal margin for the side to move (plus ``match_bonus`` when the deal ends the match). The labels of each
   iteration are written to ``RUN/labels/iter_NNNNN.npz``.
3. **Targets.** The policy is trained toward a distribution over the legal moves made from the values
   (:func:`policy_targets`): ``awr`` (the default) ``pi(a) exp((q(a) - max q) / temperature)`` normalised, where
   ``pi`` is the network as the update starts (an advantage-weighted, KL-regularised improvement step of the current
   network, as MPO's; noisy small differences of value barely move it); ``soft`` ``softmax(q / temperature)``;
   ``top`` the best move (ties shared). The loss is the cross-entropy to that target, over the last
   ``replay_iterations`` iterations' labels, ``epochs`` passes in minibatches. The critic is trained toward
   outcomes: the deal margin the labelled seat's side finally scored (times ``reward_scale``), never the search's
   values.
4. **Evaluation** (every ``eval_every`` iterations, and at the start and the end): the network alone (argmax, no
   exact last round: ``policy:checkpoint:PATH``) against each of ``eval_opponents`` over ``eval_deals`` duplicate
   deals (:func:`train.arena.evaluate_deals`), logged as ``eval/winrate_vs_<bot>`` with its Wilson interval and
   ``eval/points_vs_<bot>``, as the PPO trainer's, so ``cassino plot`` draws the curve; and, when a proxy set is
   there (:mod:`train.proxy`), its ``eval/proxy_regret`` and ``eval/proxy_top1``.
5. **Checkpoint** ``checkpoints/iter_NNNNN.pt`` (and ``latest.pt``), every ``checkpoint_every`` iterations, and
   ``final.pt``: the PPO checkpoint format (:mod:`agents.ppo_agent`), so ``checkpoint:PATH``, ``policy:checkpoint:PATH``
   and ``--resume`` read it; its ``train`` entry holds the config, the counters, the random generators' states and
   the games (they stop on a deal boundary). A resumed run reads the replay labels back from ``labels/`` and goes on
   exactly as the run would have.

The x axis of the scalars is ``global_step``: env steps (moves in all games) played so far, as PPO's.

TensorBoard scalars: ``exit/labels`` (this iteration), ``exit/labels_total``, ``exit/labels_per_s``,
``exit/search_agreement`` (share of labelled decisions where the network's most probable move is the search's best),
``exit/regret`` (mean ``max q - q(network's argmax)`` over the labels, points), ``losses/policy_loss``,
``losses/value_loss``, ``losses/entropy``, ``losses/explained_variance``, ``charts/points_vs_<bot>`` (the played
games' deal margin), ``time/label_s``, ``time/update_s``, ``time/eval_s``, and the ``eval/*`` above.

With ``--ray ADDRESS --num-workers N`` the games and their labels are made by N Ray actors, each a
:class:`LabelCollector` over ``num_envs / N`` games (the update stays here); worker 0 plays the local run's games
and draws from the driver's generator (:func:`train.rollout.worker_seeds`), so one worker is the local run.

The modules
-----------
- :mod:`train.expert.options`: :class:`ExitArgs`, the rule of each field and of their combinations, the config
  (:func:`resolve_args`).
- :mod:`train.expert.labels`: :class:`Labels`, the label files (their check, reading, joining) and the suit mirror.
- :mod:`train.expert.collect`: the games and their labels: :class:`LabelCollector`, locally (:class:`LocalLabels`)
  or on Ray actors (:class:`RayLabels`, :class:`LabelWorker`).
- :mod:`train.expert.update`: the targets (:func:`policy_targets`), the update and the network's agreement and regret
  on labels (:func:`label_stats`).
- :mod:`train.expert.loop`: the run: :func:`train` (the iterations, the evaluations, the checkpoints, resume) and
  ``cassino exit`` (:func:`main`), on the phases every trainer shares (:mod:`train.run`: set-up and resume, the run
  folder, the checkpoint, the Ctrl-C guard, the end); its run is a :class:`train.expert.loop.ExitRun`.

:mod:`train.exit` re-exports their public names (the module the code was before).
"""
