"""What one ``train()`` iteration returns (this project's keys and RLlib's) and what the
run's ending makes of it: a stop criterion met, the exit code, a test left unsolved."""
from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from typing import Any

import numpy as np

from a3c.lifecycle.loop import StepMeans
from a3c.lifecycle.run import EXIT_CODES, Run


def train_result(run: Run, step_means: StepMeans, frames: int, seconds: float, episodes: int,
                 run_seconds: float) -> dict[str, Any]:
    """The result of an iteration of ``seconds`` that gave ``frames`` and ended ``episodes``:
    counters (``training_iteration`` among them), RLlib's reward keys over the last 100
    episodes, rates, the step means; ``run_seconds`` of training in all."""
    rewards = run.rewards
    return {
        **dataclasses.asdict(run.counters),
        "episode_reward_mean": rewards.mean_reward,
        "episode_reward_best": rewards.best_mean_reward,
        "episode_reward_max": max(rewards.recent_rewards, default=None),
        "episode_reward_min": min(rewards.recent_rewards, default=None),
        "episode_len_mean": float(np.mean(rewards.recent_lengths)) if rewards.recent_lengths else None,
        "episodes_this_iter": episodes,
        "episodes_total": run.counters.episodes,
        "timesteps_total": run.counters.transitions,
        "custom_metrics": rewards.custom_summary(),
        "frames_per_second": frames / seconds if seconds > 0 else 0.0,
        "transitions_per_second": frames / run.env_info.frames_per_step / seconds if seconds > 0 else 0.0,
        "policy_version": run.learner.policy_version,
        "cur_lr": run.learner.optimizer.param_groups[0]["lr"],
        **step_means.means(),
        "iteration": run.counters.training_iteration,
        "iteration_seconds": seconds,
        "seconds": run_seconds,
        "done": False,
        "reason": None,
        "run_dir": str(run.run_dir),
    }


class LearningNotAchieved(RuntimeError):
    """An ``as_test`` run ended unsolved (RLlib's ``check_learning_achieved``); ``result`` is
    its last ``train()`` result."""

    def __init__(self, message: str, result: dict[str, Any]):
        super().__init__(message)
        self.result = result


def unsolved(result: Mapping[str, Any], goal: float | None) -> str | None:
    """Why a run that ended of itself (a budget, a stop criterion) counts as unsolved: its
    mean-100 below ``goal``; None where it is solved, has no goal, or ended otherwise (a
    failure, a stop or a signal keeps its own ending)."""
    if exit_code(result["reason"]) != 0 or result["reason"] in ("solved", "stopped"):
        return None
    mean = result["episode_reward_mean"]
    if goal is None or (mean is not None and mean >= goal):
        return None
    mean_text = "no episode ended" if mean is None else f"mean-100 reward {mean:.2f}"
    return f"the run ended unsolved ({result['reason']}): {mean_text}, below the goal {goal:g}"


def stop_criterion_met(stop: Mapping[str, float] | None, result: Mapping[str, Any]) -> str | None:
    """"stop_criterion" when any ``stop`` key's value in ``result`` is at least its bound
    (Tune's rule), else None."""
    for key, bound in (stop or {}).items():
        value = result.get(key)
        if value is not None and value >= bound:
            return "stop_criterion"
    return None


def exit_code(reason: str) -> int:
    """The CLI's exit code for a run that ended with ``reason``."""
    return EXIT_CODES.get(reason, 1)
