"""Reusable RL parts with no process code: envs, models, n-step experience, batches, losses, trackers."""
