"""One run from start to end: the ``Trainer`` (the public API), its event loop and console
reporter, the run's state (``run``), checkpoints, the rollback of a locked policy, signal
handling, load figures and the user's callbacks."""
