"""The Ray worker pool of every ``--ray`` run that plays games on actors: the rollouts of ``cassino train``
(:class:`train.ray_rollouts.RayRollouts`) and the labels of expert iteration (:class:`train.expert.collect.RayLabels`).

:class:`WorkerPool` connects to the cluster (:func:`train.ray_cluster.connect_ray`), reserves one CPU per worker
up front and starts the actors on those CPUs. Ray is imported only when a run asks for it (the ``ray`` extra).
"""

from __future__ import annotations

from typing import Any

from train.config import ConfigError
from train.ray_cluster import connect_ray

#: Seconds :class:`WorkerPool` waits for the cluster to reserve a CPU per worker before refusing the run.
FREE_CPU_WAIT_S = 10.0


class WorkerPool:
    """``num_workers`` Ray actors of ``worker`` (one CPU each, reserved up front and spread over the cluster's
    nodes), up and answering ``ready`` once this returns; worker ``i`` is
    ``worker(index=i, num_workers=num_workers, **kwargs)``.

    Args:
        worker: the actors' class (with a ``ready`` method).
        address: the cluster's address (``ray_address``).
        num_workers: the number of actors.
        kwargs: the other arguments of every actor's constructor.

    Attributes:
        actors: the actors' handles, in worker order (empty once released).

    Raises:
        ConfigError: naming ``ray_address`` (no Ray, no cluster there) or ``num_workers`` (more workers than the
            cluster has CPUs, or than it has free within :data:`FREE_CPU_WAIT_S` seconds: other jobs hold them).
    """

    def __init__(self, worker: type, address: str, num_workers: int, **kwargs: Any) -> None:
        import ray
        from ray.util.placement_group import placement_group
        from ray.util.scheduling_strategies import PlacementGroupSchedulingStrategy

        self.started = connect_ray(address)
        self.actors: list[Any] = []
        self.group: Any = None
        try:
            cpus = ray.cluster_resources().get("CPU", 0)
            if cpus < num_workers:
                raise ConfigError(f"num_workers={num_workers}: the Ray cluster at {address!r} has {cpus:g} CPUs; "
                                  "each worker takes one", field="num_workers")
            # one CPU per worker reserved up front (spread over the nodes): CPUs that other jobs hold would have the
            # workers wait for them without a word, for as long as those jobs run; a few seconds' grace covers the
            # actors of a run that has just ended (Ray frees their CPUs shortly after)
            self.group = placement_group([{"CPU": 1}] * num_workers, strategy="SPREAD")
            if not self.group.wait(timeout_seconds=FREE_CPU_WAIT_S):
                raise ConfigError(f"num_workers={num_workers}: the Ray cluster at {address!r} has {cpus:g} CPUs but "
                                  f"not {num_workers} free within {FREE_CPU_WAIT_S:g} s (other jobs hold them) and "
                                  "each worker takes one; wait for those to end, or give fewer workers",
                                  field="num_workers")
            actor = ray.remote(num_cpus=1)(worker)
            self.actors = [actor.options(scheduling_strategy=PlacementGroupSchedulingStrategy(
                self.group, placement_group_bundle_index=i)).remote(index=i, num_workers=num_workers, **kwargs)
                for i in range(num_workers)]
            ray.get([a.ready.remote() for a in self.actors])
        except BaseException:
            self.release()
            raise

    def release(self) -> None:
        """End the workers, give their reserved CPUs back, and shut Ray down when it was started here."""
        import ray

        for a in self.actors:
            ray.kill(a)
        self.actors = []
        if self.group is not None:  # the reserved CPUs go back to the cluster (one this run did not start, too)
            from ray.util.placement_group import remove_placement_group

            remove_placement_group(self.group)
            self.group = None
        if self.started:
            ray.shutdown()
            self.started = False

    def state(self) -> dict[str, Any]:
        """The checkpoint's fields of the workers' games: worker 0's ``env_state`` (where a one-worker or local run
        keeps it) and the others' ``{env_state, numpy_rng}`` under ``workers`` (absent with one worker)."""
        import ray

        states = ray.get([a.state.remote() for a in self.actors])
        return {"env_state": states[0]["env_state"], **({"workers": states[1:]} if len(states) > 1 else {})}

    def load(self, tr: dict[str, Any]) -> None:
        """Send every worker its games (and generator; worker 0 draws from the driver's) from a checked checkpoint's
        ``train`` entry, as :meth:`state` wrote it.

        Raises:
            ConfigError: naming ``num_workers``, a checkpoint made with another number of workers.
        """
        import ray

        workers = [{"env_state": tr["env_state"], "numpy_rng": None}, *tr.get("workers", [])]
        if len(workers) != len(self.actors):
            raise ConfigError(f"num_workers={len(self.actors)}: the checkpoint was made with {len(workers)} workers",
                              field="num_workers")
        ray.get([a.load.remote(w["env_state"], w["numpy_rng"]) for a, w in zip(self.actors, workers, strict=True)])
