"""Training scripts, one per algorithm in the CleanRL manner (run as ``python -m train.<script>``).

Each script parses a tyro ``Args`` dataclass, names its run ``{env}__{exp}__{seed}__{time}`` and writes TensorBoard
scalars under ``runs/``; the networks it trains live in :mod:`agents`.
"""
