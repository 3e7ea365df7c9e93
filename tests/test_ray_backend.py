"""The Ray backend on a real two-node cluster on this machine, inside a network namespace
the test creates (only loopback up, so Ray can reach no other address; unprivileged where
user namespaces are allowed): actors on both nodes, a replacement on a full cluster,
learning going on after a node is lost with blocks from the replacements, a hung actor
replaced, DQN's blocks reaching the replay buffer, SAC's float actions reaching its replay,
PPO learning CartPole, an algorithm's own columns reaching the learner, too few CPUs
and other code on a node refused, a Ctrl-C or SIGTERM that stops every actor and the Ray
the run started, and a resume (tests/ray_scenarios.py). Bad backend flags are one line and
exit 2 (tests/test_cli.py)."""
import os
import tempfile
from pathlib import Path

import pytest

from a3c.algos import get_algorithm
from a3c.config import make_config
from a3c.transport.ray_actor import BLOCKS_IN_FLIGHT, block_steps
from tests.namespaces import (
    RAY_SCENARIOS,
    SCENARIO_FOLDER,
    Scenario,
    scenario_result,
    skip_or_fail_without_namespace,
)


def test_actors_hold_as_many_transitions_in_flight_as_the_process_backends_queues():
    a3c = get_algorithm("a3c")
    pong = make_config(env="PongNoFrameskip-v4", backend="ray", processes=1, envs_per_process=32)
    assert block_steps(a3c, pong) == 4  # 8 queue slots of 32 transitions, in two blocks
    four = make_config(env="CartPole-v1", backend="ray", processes=4, envs_per_process=8)
    # two batches of 128 in the queue: 32 slots of 8, a quarter each child, two blocks
    assert block_steps(a3c, four) == 4 and 4 * BLOCKS_IN_FLIGHT * block_steps(a3c, four) * 8 == 2 * 128
    small = make_config(env="CartPole-v1", backend="ray", processes=2, envs_per_process=8, batch_size=20)
    assert block_steps(a3c, small) == 1  # 5 slots, 3 a child: at least a step


@pytest.fixture(scope="module")
def seen(request):
    """What tests/ray_scenarios.py saw: the run that started once the suite was collected
    (conftest.py), or one started now."""
    folder = os.environ.get(SCENARIO_FOLDER)
    if folder is None or not (Path(folder) / "started").exists():
        pytest.importorskip("ray", reason="Ray is not installed (the ray extra)")
        skip_or_fail_without_namespace()
        scenario = Scenario(RAY_SCENARIOS, Path(tempfile.mkdtemp(prefix="ray-scenario-")))
        request.addfinalizer(scenario.stop)
        folder = scenario.folder
    return scenario_result(Path(folder), timeout=540)


@pytest.mark.timeout(600)
def test_actors_spread_over_both_nodes_and_learning_goes_on_after_one_node_is_lost(seen):
    cluster = seen["cluster"]
    assert len(cluster["nodes_at_start"]) == 2 and len(set(cluster["nodes_at_start"])) == 2
    after = cluster["after_node_loss"]
    # 4,000 frames and more after every replacement sent, the run still going: a step per 128
    # rows (learning on Ray to a goal: the DQN and PPO runs below)
    assert after["steps_since_loss"] >= 30 and after["reason"] is None, after
    assert after["worker_restarts"] >= 1 and after["frames"] > cluster["frames_before_loss"]
    # every replacement sent blocks, from the node that is left
    replaced = cluster["replacements_sent_from"]
    assert len(replaced) >= 1 and replaced == [cluster["head_node"]] * len(replaced)


@pytest.mark.timeout(600)
def test_a_replacement_runs_where_a_cpu_is_free_on_a_full_cluster(seen):
    full = seen["cluster"]["full"]
    assert full["free_cpus_before"] == 0  # the learner's seat and four actors on 5 CPUs
    assert full["restarts"] == 1 and full["replacement_node"] is not None, full
    assert full["replacement_seconds"] < 30, full
    assert full["actors_left_after_stop"] == []  # stopped by the run, the driver still connected


@pytest.mark.timeout(600)
def test_too_few_cpus_and_other_code_are_refused_and_a_hung_actor_is_replaced(seen):
    cluster = seen["cluster"]
    assert "--processes 5 needs 5 CPUs for actors and the cluster has 4 besides the learner's 1" == \
        cluster["too_many"]
    assert cluster["no_resource"] == ("--processes 1 needs 1 CPUs for actors and the nodes with the resource "
                                      "'actor_host' have 0 besides the learner's 1")
    assert "runs other a3c code" in cluster["other_code"] and "same version" in cluster["other_code"]
    hung = cluster["hung"]
    # the first hung actor is replaced, the replacement hangs too and spends the budget
    assert hung["reason"] == "worker_died" and "(--worker-timeout 3): taken for stuck and killed" in hung["message"], hung
    assert hung["restarts"] == 1, hung
    assert hung["seconds"] < 60, hung


@pytest.mark.timeout(600)
def test_dqn_on_ray_fills_its_replay_buffer_and_learns_from_it(seen):
    dqn = seen["cluster"]["dqn"]
    assert dqn["replay"] >= 500 and dqn["steps"] >= 50
    # from its actors' blocks alone it climbs to three times random play's 22
    assert dqn["reason"] == "solved" and dqn["mean_reward"] >= 66.0, dqn


@pytest.mark.timeout(600)
def test_sac_on_ray_stores_the_float_actions_its_actor_sends_and_steps_on_them_a_few_steps_behind(seen):
    sac = seen["cluster"]["sac"]
    assert sac["replay"] == sac["frames"] >= 800, sac  # every row stored
    low, high = sac["actions"]  # the squashed Gaussian's draws over Reach's [-2, 2], as floats
    assert -2.0 < low < -1.0 and 1.0 < high < 2.0 and sac["distinct_actions"] > 0.9 * sac["replay"], sac
    # a step per 4 rows from the 200th: the learner kept up, and the actor acted a few steps behind
    assert sac["policy_version"] >= (sac["frames"] - 200) // 4 - 8 and sac["policy_lag"] < 50, sac


@pytest.mark.timeout(600)
def test_ppo_on_ray_learns_cartpole_from_rollouts_of_its_actors(seen):
    ppo = seen["cluster"]["ppo"]
    assert ppo["reason"] == "solved" and ppo["episode_reward_mean"] >= 66.0 and ppo["policy_lag"] > 0, ppo


@pytest.mark.timeout(600)
def test_an_algorithms_own_columns_reach_the_learner_from_ray_actors(seen):
    columns = seen["cluster"]["columns"]  # tests/test_columns.py's algorithm, on two actors
    assert columns["rows_wrong"] == 0 and columns["rows_checked"] == columns["transitions"] >= 2000, columns
    assert columns["workers_seen"] == [0, 1], columns


@pytest.mark.timeout(600)
def test_worker_side_callbacks_run_in_the_actors(seen):
    metrics = seen["cluster"]["callbacks"]  # every Counting episode: 5 steps, a return of 15
    assert (metrics["length_mean"], metrics["return_max"], metrics["last_t_min"]) == (5.0, 15.0, 5.0), metrics


@pytest.mark.timeout(600)
def test_foreach_env_reaches_every_env_of_every_actor_and_the_run_goes_on(seen):
    cluster = seen["cluster"]
    per_actor = cluster["foreach_env"]
    assert len(per_actor) == 2 and all(names and set(names) == {"CountingEnv"} for names in per_actor), per_actor
    assert cluster["frames_after_call"] >= cluster["custom_model"]["frames"] + 500


@pytest.mark.timeout(600)
def test_a_model_registered_in_the_driver_reaches_the_actors(seen):
    custom = seen["cluster"]["custom_model"]  # its class defined in a function: shipped by value
    assert custom["features"] == 6 and custom["restarts"] == 0 and custom["frames"] >= 1000, custom


@pytest.mark.timeout(600)
def test_ctrl_c_stops_every_actor_and_the_ray_it_started_saves_and_a_resume_ends_by_sigterm(seen):
    own = seen["own"]
    assert own["exit_code"] == 130 and own["reason"] == "interrupted" and own["saved"], own["output"]
    assert own["descendants"] >= 3 and own["left"] == [], own["output"]
    term = seen["terminated"]  # the resume of own's checkpoint
    # a SIGTERM to the group would otherwise end the daemons while the run is still ending
    assert len(term["daemons_block_sigterm"]) == 2 and all(term["daemons_block_sigterm"]), term
    assert term["exit_code"] == 143 and term["reason"] == "terminated" and term["saved"], term["output"]
    assert term["frames"] > own["frames"] and term["left"] == [], term["output"]
