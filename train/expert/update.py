"""The update of expert iteration: the policy targets made from the move values (:func:`policy_targets`), the
minibatch passes toward them (:func:`update`), the parameters an update moves, and the network's agreement and
regret on labels (:func:`label_stats`)."""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from train.config import ConfigError
from train.expert.labels import Labels
from train.expert.options import TARGETS, ExitArgs
from train.stopping import Diverged


def policy_targets(q: np.ndarray, mask: np.ndarray, prior: np.ndarray, target: str, temperature: float) -> np.ndarray:
    """float32[N, W]: the distribution over each row's legal moves the policy is trained toward.

    Args:
        q: float[N, W], move values in points (NaN past the legal moves).
        mask: bool[N, W], the legal moves.
        prior: float[N, W], the behaviour policy's probabilities (``awr`` only).
        target: ``soft`` (``softmax(q / temperature)``), ``top`` (the best moves, ties sharing equally; also the
            cross-entropy part of ``regret``, :func:`update`) or ``awr`` (``prior * exp((q - max q) / temperature)``,
            normalised; the prior floored at 1e-3 so a move the network never plays can still be learned).
        temperature: points per unit of logit (soft, awr).

    >>> q = np.array([[1.0, 0.0, np.nan]]); m = np.array([[True, True, False]])
    >>> policy_targets(q, m, np.full((1, 3), 0.5), "top", 1.0).tolist()
    [[1.0, 0.0, 0.0]]
    >>> [round(float(x), 3) for x in policy_targets(q, m, np.full((1, 3), 0.5), "soft", 1.0)[0]]
    [0.731, 0.269, 0.0]

    Raises:
        ValueError: an unknown ``target``.
    """
    if target not in TARGETS:
        raise ValueError(f"target must be one of {', '.join(TARGETS)}, got {target!r}")
    qv = np.where(mask, np.nan_to_num(q, nan=0.0), -np.inf)
    best = qv.max(axis=1, keepdims=True)
    if target in ("top", "regret"):
        w = (mask & (qv >= best - 1e-9)).astype(np.float64)
    else:
        w = np.where(mask, np.exp((qv - best) / temperature), 0.0)
        if target == "awr":
            w = w * np.where(mask, np.maximum(prior, 1e-3), 0.0)
    return (w / w.sum(axis=1, keepdims=True)).astype(np.float32)


def _batch(data: Labels, idx: np.ndarray) -> Any:
    from agents.policy import MoveBatch

    return MoveBatch.from_arrays(data.obs[idx], data.kind[idx], data.card[idx], data.value[idx], data.cards[idx],
                                 data.mask[idx], None if data.feat is None else data.feat[idx],
                                 None if data.crit is None else data.crit[idx])


def network_probs(policy: Any, data: Labels, chunk: int = 4096) -> np.ndarray:
    """float32[N, W]: ``policy``'s move probabilities on every row of ``data`` (0 past the legal moves)."""
    import torch

    out = np.zeros(data.mask.shape, dtype=np.float32)
    policy.eval()
    with torch.no_grad():
        for s in range(0, len(data), chunk):
            idx = np.arange(s, min(len(data), s + chunk))
            p = torch.softmax(policy.logits(_batch(data, idx)), dim=-1).cpu().numpy()
            out[idx, :p.shape[1]] = p
    return out


def update(policy: Any, optimizer: Any, data: Labels, args: ExitArgs, rng: np.random.Generator) -> dict[str, float]:
    """``args.epochs`` passes of minibatch steps over ``data``: cross-entropy to :func:`policy_targets` (for ``awr``
    the prior is the network as it is when the update starts, :func:`network_probs`: each iteration's step is
    anchored to the network it improves, the replayed labels included) plus
    ``vf_coef`` times the critic's squared error to ``ret * reward_scale`` (halved), minus ``ent_coef`` times the
    entropy. ``target="regret"``: the policy loss is the expected regret ``sum_a pi(a) (max q - q(a))`` (points:
    each decision weighs what is at stake in it) plus 0.1 times the cross-entropy to the best moves. The optimiser
    holds the parameters :func:`trained_parameters` gives (with ``train_params`` one of the heads neither the
    rest of the network nor the critic moves, and the value loss is left out). The forward passes run at
    ``args.precision`` (:mod:`agents.precision`). Returns the last pass's mean losses."""
    import torch

    from agents.device import device_of
    from agents.policy import masked_entropy, masked_log_softmax
    from agents.precision import autocast

    prior = network_probs(policy, data) if args.target == "awr" else data.prior
    target = policy_targets(data.q, data.mask, prior, args.target, args.temperature)
    gap = None
    if args.target == "regret":
        qv = np.where(data.mask, np.nan_to_num(data.q, nan=0.0), -np.inf)
        gap = np.where(data.mask, qv.max(axis=1, keepdims=True) - qv, 0.0).astype(np.float32)
    head_only = args.train_params != "all"
    params = [q for group in optimizer.param_groups for q in group["params"]]  # trained_parameters', set at the start
    ret = data.ret * np.float32(args.reward_scale)
    device = device_of(policy)  # each minibatch's tensors go to the network's device once (on the CPU: no copy)
    N = len(data)
    mb = max(1, min(args.minibatch_size, N))
    stats = {"policy_loss": math.nan, "value_loss": math.nan, "entropy": math.nan}
    policy.train()
    for _epoch in range(args.epochs):
        perm = rng.permutation(N)
        sums = np.zeros(3)
        steps = 0
        for s in range(0, N - mb + 1, mb):
            idx = np.sort(perm[s:s + mb])
            batch = _batch(data, idx).to(device)
            W = batch.mask.shape[1]
            with autocast(args.precision, device):  # the forward pass only (agents.precision)
                logits, value = policy(batch)
            logp = masked_log_softmax(logits, batch.mask)
            tgt = torch.from_numpy(target[idx, :W]).to(device)
            pg = -(tgt * logp).sum(-1).mean()
            if gap is not None:
                pg = 0.1 * pg + (logp.exp() * torch.from_numpy(gap[idx, :W]).to(device)).sum(-1).mean()
            vl = 0.5 * ((value - torch.from_numpy(ret[idx]).to(device)) ** 2).mean()
            ent = masked_entropy(logits, batch.mask).mean()
            loss = pg - args.ent_coef * ent + (0.0 if head_only else args.vf_coef * vl)
            optimizer.zero_grad()
            loss.backward()
            grad_norm = torch.nn.utils.clip_grad_norm_(params, args.max_grad_norm)
            if not (torch.isfinite(loss) and torch.isfinite(grad_norm)):  # before the step: the weights stay good
                what = "loss" if not torch.isfinite(loss) else "gradient norm"
                raise Diverged(f"the {what} is not finite ({(loss if what == 'loss' else grad_norm).item()}) in "
                               f"epoch {_epoch + 1}, minibatch {s // mb + 1} of the update; no weights of it were "
                               "saved (with a smaller learning_rate, or reward_scale)")
            optimizer.step()
            sums += (pg.item(), vl.item(), ent.item())
            steps += 1
        if steps:
            stats = dict(zip(("policy_loss", "value_loss", "entropy"), (sums / steps).tolist(), strict=True))
    return stats


def trained_parameters(policy: Any, train_params: str) -> list[Any]:
    """The parameters an update moves (:attr:`ExitArgs.train_params`): every one, or one head's alone (the
    last-round or the earlier-rounds head; the others are set to need no gradient).

    Raises:
        ConfigError: naming ``train_params``, the head alone of a network that has none.
    """
    if train_params == "all":
        return list(policy.parameters())
    if train_params == "early_rounds_head":
        head = policy.early_rounds_parameters()
        if not head:
            raise ConfigError("train_params=early_rounds_head: the network has no earlier-rounds head (give "
                              "early_rounds_head a width)", field="train_params")
    else:
        head = policy.last_round_parameters()
        if not head:
            raise ConfigError("train_params=last_round_head: the network has no last-round head (give "
                              "last_round_head a width)", field="train_params")
    keep = {id(p) for p in head}
    for p in policy.parameters():
        p.requires_grad_(id(p) in keep)
    return head


def label_stats(policy: Any, data: Labels, reward_scale: float) -> dict[str, float]:
    """The network's agreement with the search on ``data`` (its argmax is a best labelled move), its mean regret
    (points) and the critic's explained variance of the outcomes."""
    import torch

    if not len(data):
        return {"agreement": math.nan, "regret": math.nan, "explained_variance": math.nan}
    agree, regret, values = [], [], []
    policy.eval()
    with torch.no_grad():
        for s in range(0, len(data), 4096):
            i = np.arange(s, min(len(data), s + 4096))
            logits, v = policy(_batch(data, i))
            a = logits.argmax(-1).cpu().numpy()
            q = np.where(data.mask[i], np.nan_to_num(data.q[i], nan=-np.inf), -np.inf)
            best = q.max(axis=1)
            got = q[np.arange(len(i)), a]
            agree.append(got >= best - 1e-9)
            regret.append(best - got)
            values.append(v.cpu().numpy())
    v = np.concatenate(values)
    y = data.ret * np.float32(reward_scale)
    var = float(np.var(y))
    return {"agreement": float(np.concatenate(agree).mean()), "regret": float(np.concatenate(regret).mean()),
            "explained_variance": math.nan if var == 0 else float(1 - np.var(y - v) / var)}
