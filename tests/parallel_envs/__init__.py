"""Tiny PettingZoo-style parallel envs for the multi-agent tests, each a module with a
``parallel_env()`` as ``--env tests.parallel_envs.NAME`` expects."""
