"""``trainer.workers.foreach_worker`` and ``foreach_env``, RLlib's worker set as the notes'
curriculum uses it: the function reaches every worker pickled by value, is called before the
worker's next step with a view of it, and its results come back in worker order; a function
that raises is named with its traceback and the run goes on. (Ray's actors: the cluster
scenario, tests/ray_scenarios.py.)"""
from __future__ import annotations

import pytest

import a3c
from a3c import Trainer
from a3c.transport.worker_calls import WorkerCallError

TASKS = "tests.toy_envs:TaskCounting-v0"


class PhaseByNotes(a3c.Callback):
    """The notes' curriculum: after each result, every env of every worker gets the next phase."""

    def on_train_result(self, *, trainer, result, **kwargs):
        phase = 2 + result["training_iteration"]  # episodes of 3 steps after the first result, 4 after the second
        trainer.workers.foreach_worker(lambda worker: worker.foreach_env(lambda env: env.set_task(phase)))


@pytest.mark.parametrize("backend", ["serial", "mp"])
def test_a_function_reaches_every_worker_and_every_env_and_its_results_come_back(tmp_path, backend):
    with Trainer(env=TASKS, backend=backend, processes=2, envs_per_process=3, logdir=str(tmp_path),
                 stop_reward=1e9, callbacks=[PhaseByNotes()]) as trainer:
        assert trainer.workers.foreach_worker(lambda worker: worker.worker_index) == [0, 1]  # starts the run
        marked = 7  # a local defined here: the function travels by value
        trainer.workers.foreach_env(lambda env: setattr(env, "mark", marked))
        assert trainer.workers.foreach_env(lambda env: env.mark) == [[7, 7, 7], [7, 7, 7]]  # the same envs
        trainer.train(frames=300)
        assert trainer.workers.foreach_env(lambda env: env.get_task()) == [[3, 3, 3], [3, 3, 3]]
        trainer.train(frames=300)  # the second result: phase 4 (what a task does: the curriculum tests)
        assert trainer.workers.foreach_env(lambda env: env.get_task()) == [[4, 4, 4], [4, 4, 4]]
        with pytest.raises(WorkerCallError, match="(?s)function raised in worker 0:.*ZeroDivisionError"):
            trainer.workers.foreach_worker(lambda worker: 1 / 0)
        result = trainer.train(frames=300)  # the workers went on
        assert result["frames"] >= 900 and result["worker_restarts"] == 0


def test_envs_stepped_as_one_vector_are_named_in_one_line(tmp_path):
    with Trainer(env="CartPole-v1", backend="serial", processes=1, logdir=str(tmp_path)) as trainer, \
            pytest.raises(WorkerCallError, match="foreach_env: .* steps its envs as one vector"):
        trainer.workers.foreach_env(lambda env: env)
