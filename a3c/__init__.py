"""Data-parallel A3C trainer: config, worker, pool, learner, checkpoints and the train loop."""
