"""The parts that two or more algorithms, or the trainer, share, imported as ``a3c.lib``: envs,
building blocks of nets, distributions, n-step experience, advantages, replay, trackers. No
process code, and no algorithm of its own (those live in ``a3c/algos/NAME``)."""
