"""Bad input: one line on stderr, exit code 2, and no child process ever started."""
import dataclasses
import importlib.util
import subprocess
import sys

import pytest
import torch

import a3c.cli
from a3c.algos import get_algorithm
from a3c.algos.a3c.settings import (
    ATARI_PRESET,
    NATURE84_PRESET,
    SMALL_PRESET,
    VECTOR_PRESET,
    atari_preset,
    grads_layout,
    nature84_preset,
    small_preset,
    vector_preset,
)
from a3c.config import KEYWORDS, OWNERS, SETTINGS, build_parser, flag, make_config, parse_config
from a3c.lib.envs import describe_env
from a3c.options import CORES, ConfigError
from a3c.transport.pool import messages_per_worker, queue_capacity

BAD_INPUTS = [
    (["--env", "CartPole-v1"], "-n/--name"),
    (["-n", "../../x", "--env", "CartPole-v1"], "--name '../../x' begins a folder's name under --logdir"),
    (["-n", "x", "--env", "NoSuchEnv-v9"], "unknown env id"),
    (["-n", "x", "--env", "Cartpole-v1"], "unknown env id 'Cartpole-v1': Environment `Cartpole` doesn't exist. Did you mean: `CartPole`?"),
    (["-n", "x", "--env", "CartPole-v9"], "It provides versioned environments: [ `v0`, `v1` ]"),
    (["-n", "x", "--env", "tests.toy_envs:MissingDependency-v0"], 'needs what is not installed: toybox is not installed, run `pip install "toybox"`'),
    (["-n", "x", "--env", "Pendulum-v1", "--algo", "dqn"], "--algo dqn takes Discrete actions"),
    (["-n", "x", "--env", "MountainCarContinuous-v0", "--algo", "dqn"], "MountainCarContinuous-v0's are Box; --algo a3c, ppo, mappo, sac"),
    (["-n", "x", "--env", "tests.toy_envs:MultiDiscrete-v0", "--algo", "dqn"],
     "--algo dqn takes Discrete actions and tests.toy_envs:MultiDiscrete-v0's are MultiDiscrete; --algo a3c, ppo, mappo"),
    (["-n", "x", "--env", "tests.toy_envs:Image-v0"], "observations have shape (8, 8)"),
    (["-n", "x", "--env", "CartPole-v1", "--processes", "0"], "--processes"),
    (["-n", "x", "--env", "CartPole-v1", "--processes", "1000000"], "each child process takes at least 128 MiB"),
    (["-n", "x", "--env", "CartPole-v1", "--envs-per-process", "0"], "--envs-per-process"),
    (["-n", "x", "--env", "CartPole-v1", "--batch-size", "0"], "--batch-size"),
    (["-n", "x", "--env", "CartPole-v1", "--reward-steps", "0"], "--reward-steps"),
    (["-n", "x", "--env", "CartPole-v1", "--gamma", "0"], "--gamma"),
    (["-n", "x", "--env", "CartPole-v1", "--gamma", "1.5"], "--gamma"),
    (["-n", "x", "--env", "CartPole-v1", "--lr", "0"], "--lr"),
    (["-n", "x", "--env", "CartPole-v1", "--lr", "-1e-3"], "--lr"),
    (["-n", "x", "--env", "CartPole-v1", "--clip-grad", "0"], "--clip-grad"),
    (["-n", "x", "--env", "CartPole-v1", "--max-frames", "0"], "--max-frames"),
    (["-n", "x", "--env", "CartPole-v1", "--seed", "-1"], "--seed must be >= 0, got -1"),
    (["-n", "x", "--env", "CartPole-v1", "--seed", str(2**32)], "--seed must be <= 4294967295, got 4294967296"),
    (["-n", "x", "--env", "CartPole-v1", "--max-worker-restarts", "-1"], "--max-worker-restarts"),
    (["-n", "x", "--env", "CartPole-v1", "--mode", "both"], "--mode"),
    (["-n", "x", "--env", "CartPole-v1", "--grad-batch", "0"], "--grad-batch"),
    (["-n", "x", "--env", "CartPole-v1", "--max-policy-lag", "-1"], "--max-policy-lag"),
    (["-n", "x", "--env", "CartPole-v1", "--max-seconds", "0"], "--max-seconds"),
    (["-n", "x", "--env", "CartPole-v1", "--learner-threads", "0"], "--learner-threads"),
    (["-n", "x", "--env", "CartPole-v1", "--save-every", "0"], "--save-every"),
    (["-n", "x", "--env", "CartPole-v1", "--report-interval", "0"], "--report-interval"),
    (["-n", "x", "--env", "CartPole-v1", "--queue-size", "-1"], "--queue-size"),
    (["-n", "x", "--env", "CartPole-v1", "--logdir", "/etc/hostname/runs"], "--logdir"),
    (["-n", "x", "--env", "CartPole-v1", "--processes", "two"], "--processes"),
    (["-n", "x", "--env", "CartPole-v1", "--algo", "dqn", "--tau", "2"], "--tau must be <= 1"),
    (["-n", "x", "--env", "CartPole-v1", "--algo", "dqn", "--priority-beta", "1.5"], "--priority-beta"),
    (["-n", "x", "--env", "CartPole-v1", "--algo", "dqn", "--replay-size", "0"], "--replay-size"),
    (["-n", "x", "--env", "CartPole-v1", "--algo", "dqn", "--mode", "grads"],
     "--mode is a setting of --algo a3c, not of --algo dqn"),
    (["-n", "x", "--env", "CartPole-v1", "--algo", "dqn", "--entropy-beta", "0.1"], "--algo a3c"),
    (["-n", "x", "--env", "CartPole-v1", "--replay-size", "1000"], "--replay-size is a setting of --algo dqn"),
    (["-n", "x", "--env", "CartPole-v1", "--algo", "dqn", "--replay-size", "1000", "--learning-starts", "2000"],
     "--learning-starts 2,000 is above --replay-size 1,000"),
    (["-n", "x", "--env", "CartPole-v1", "--algo", "sarsa"], "--algo"),
    (["-n", "x", "--env", "CartPole-v1", "--screen-size", "42"], "--screen-size is for Atari frames"),
    (["-n", "x", "--screen-size", "64"], "--screen-size"),
    (["-n", "x", "--env", "CartPole-v1", "--backend", "spark"], "--backend"),
    (["-n", "x", "--env", "CartPole-v1", "--ray-address", "127.0.0.1:6379"], "is for --backend ray"),
    (["-n", "x", "--env", "CartPole-v1", "--ray-actor-resource", "actor_host"], "is for --backend ray"),
    (["-n", "x", "--env", "CartPole-v1", "--wandb-project", "cartpole"], "--wandb-project is for --track"),
    (["-n", "x", "--algo", "sac"], "--algo sac is for Box actions; Atari games have Discrete ones"),
    (["-n", "x", "--env", "CartPole-v1", "--algo", "sac"],
     "--algo sac takes Box actions and CartPole-v1's are Discrete; --algo a3c, dqn, ppo, maddpg, qmix"),
    (["-n", "x", "--env", "tests.toy_envs:MultiDiscrete-v0", "--algo", "sac"],
     "--algo sac takes Box actions and tests.toy_envs:MultiDiscrete-v0's are MultiDiscrete; --algo a3c, ppo, mappo"),
    (["-n", "x", "--env", "Pendulum-v1", "--algo", "sac", "--tau", "0"], "--tau of --algo sac must be > 0"),
    (["-n", "x", "--env", "Pendulum-v1", "--temperature", "0.2"], "--temperature is a setting of --algo sac"),
    (["-n", "x", "--algo", "td3"], "--algo td3 is for Box actions; Atari games have Discrete ones"),
    (["-n", "x", "--env", "CartPole-v1", "--algo", "td3"], "--algo td3 takes Box actions and CartPole-v1's are Discrete"),
    (["-n", "x", "--env", "Pendulum-v1", "--algo", "td3", "--policy-delay", "0"], "--policy-delay"),
    (["-n", "x", "--env", "Pendulum-v1", "--algo", "sac", "--exploration-noise", "0.2"],
     "--exploration-noise is a setting of --algo td3, not of --algo sac"),
    (["-n", "x", "--env", "CartPole-v1", "--backend", "ray", "--worker-timeout", "0"], "--worker-timeout"),
    (["-n", "x", "--env", "CartPole-v1", "--backend", "ray", "--mode", "grads"],
     "--algo a3c's must each reach the learner as it is made"),
    (["-n", "x", "--env", "CartPole-v1", "--mode", "grads", "--entropy-decay-frames", "1000"],
     "--entropy-decay-frames is for data mode"),
    (["-n", "x", "--env", "CartPole-v1", "--mode", "grads", "--passes", "2"], "--passes is for data mode"),
    (["-n", "x", "--env", "CartPole-v1", "--passes", "0"], "--passes"),
    (["-n", "x", "--env", "CartPole-v1", "--passes-frames", "1000"], "set --passes above 1"),
    (["-n", "x", "--env", "CartPole-v1", "--passes-from", "1000"], "set --passes above 1"),
    (["-n", "x", "--env", "CartPole-v1", "--passes", "2", "--passes-from", "9", "--passes-frames", "9"],
     "--passes-from (9) must be below --passes-frames (9)"),
    (["-n", "x", "--env", "CartPole-v1", "--lr-schedule", "0:2,1e6"], "'1e6' is not FRAMES:FACTOR"),
    (["-n", "x", "--env", "CartPole-v1", "--lr-schedule", "9:2,8:1"], "must not fall"),
    (["-n", "x", "--env", "CartPole-v1", "--lr-schedule", "0:-1"], "is not above 0"),
    (["-n", "x", "--env", "CartPole-v1", "--mode", "grads", "--lr-schedule", "0:2"],
     "--lr-schedule is for data mode"),
    (["-n", "x", "--env", "CartPole-v1", "--backend", "ray", "--ray-address", "nowhere"], "HOST:PORT"),
    (["-n", "x", "--env", "CartPole-v1", "--return-lambda", "1.5"], "--return-lambda"),
    (["-n", "x", "--env", "CartPole-v1", "--algo", "ppo", "--return-lambda", "0.9"],
     "--return-lambda is a setting of --algo a3c, not of --algo ppo"),
    (["-n", "x", "--algo", "ppo", "--preset", "box"], "--preset box is for Box actions"),
    (["-n", "x", "--algo", "ppo", "--preset", "mujoco"], "--preset mujoco is for Box actions"),
    (["-n", "x", "--mlp-hidden", "64"], "--mlp-hidden is for vector observations"),
    (["-n", "x", "--env", "CartPole-v1", "--algo", "dqn", "--epsilon-schedule", "1,0.02"], "is not INITIAL,FINAL,FRAMES"),
    (["-n", "x", "--env", "CartPole-v1", "--random-frames", "-1"], "--random-frames"),
    (["-n", "x", "--env", "CartPole-v1", "--stop", "loss_total=1"], "--stop loss_total: not a result key"),
    (["-n", "x", "--env", "CartPole-v1", "--stop", "training_iteration"], "is not KEY=VALUE with a number"),
    (["-n", "x", "--env", "CartPole-v1", "--env-config", "[1, 2]"], "--env-config: must be a JSON object"),
    (["-n", "x", "--env", "CartPole-v1", "--env-config", "{size: 5}"], "--env-config: not JSON"),
    (["-n", "x", "--env-config", '{"frameskip": 2}'], "--env-config is for envs made one by one"),
    (["-n", "x", "--frame-stack", "4"], "--frame-stack is for envs with one agent and no Atari frames"),
    (["-n", "x", "--env", "CartPole-v1", "--env-config", '{"no_such_keyword": 2}'], "making CartPole-v1 failed"),
]
# nothing listens on port 1 of this machine: refused at once, never a minute of retries
BAD_INPUTS.append((["-n", "x", "--env", "CartPole-v1", "--backend", "ray", "--ray-address", "127.0.0.1:1"],
                   "--ray-address 127.0.0.1:1: cannot connect" if importlib.util.find_spec("ray")
                   else "--backend ray needs Ray"))
if not torch.cuda.is_available():
    BAD_INPUTS.append((["-n", "x", "--env", "CartPole-v1", "--cuda"], "CUDA"))


@pytest.mark.parametrize("argv, named", BAD_INPUTS, ids=[" ".join(a[-2:]) for a, _ in BAD_INPUTS])
def test_bad_input_is_one_line_and_exit_2_before_any_child(argv, named, capsys, monkeypatch):
    def must_not_start(*args, **kwargs):
        raise AssertionError("a trainer was made from bad input")

    monkeypatch.setattr(a3c.cli.Trainer, "from_config", must_not_start)
    with pytest.raises(SystemExit) as exited:
        a3c.cli.main(argv)
    assert exited.value.code == 2
    stderr = capsys.readouterr().err
    assert len(stderr.strip().splitlines()) == 1, stderr
    assert named in stderr


def test_presets_by_env_family_and_flags_override():
    pong = parse_config(["-n", "p"])
    assert (pong.env_id, pong.lr, pong.clip_grad, pong.stop_reward) == (
        "PongNoFrameskip-v4", ATARI_PRESET.lr, ATARI_PRESET.clip_grad, 18.0)
    cartpole = parse_config(["-n", "c", "--env", "CartPole-v1", "--gamma", "0.9"])
    assert cartpole.stop_reward == 475.0 and cartpole.gamma == 0.9
    assert cartpole.clip_grad == VECTOR_PRESET.clip_grad
    assert parse_config(["-n", "c", "--env", "CartPole-v1", "--stop-reward", "200"]).stop_reward == 200
    assert parse_config(["-n", "c", "--env", "CartPole-v1", "--stop-reward", "inf"]).stop_reward is None  # no goal


def test_the_vector_nets_width_and_a_gaussians_first_log_std_are_settings():
    config = parse_config(["-n", "h", "--env", "Pendulum-v1", "--algo", "ppo", "--mlp-hidden", "64",
                           "--log-std-init", "-2"])
    net = get_algorithm("ppo").build_net(describe_env("Pendulum-v1"), vars(config))
    assert [layer.out_features for layer in net.policy if hasattr(layer, "out_features")] == [64, 64, 1]
    assert torch.equal(net.log_std.detach(), torch.tensor([-2.0]))
    default = get_algorithm("ppo").build_net(describe_env("Pendulum-v1"), vars(parse_config(
        ["-n", "h", "--env", "Pendulum-v1", "--algo", "ppo"])))
    assert default.policy[0].out_features == 128 and float(default.log_std) == 0.0
    mujoco = parse_config(["-n", "h", "--env", "Pendulum-v1", "--algo", "ppo", "--preset", "mujoco"])
    box = parse_config(["-n", "h", "--env", "Pendulum-v1", "--algo", "ppo", "--preset", "box"])
    assert (mujoco.mlp_hidden, mujoco.log_std_init, box.mlp_hidden, box.log_std_init) == (256, -2.0, 128, 0.0)
    assert dataclasses.replace(mujoco, mlp_hidden=128, log_std_init=0.0, preset="box") == box


def test_help_lists_every_hyperparameter(capsys):
    with pytest.raises(SystemExit) as exited:
        parse_config(["--help"])
    assert exited.value.code == 0
    text = capsys.readouterr().out
    for option in ["--processes", "--envs-per-process", "--batch-size", "--reward-steps", "--gamma",
                   "--lr", "--entropy-beta", "--clip-grad", "--stop-reward", "--max-frames", "--seed",
                   "--logdir", "--cuda", "--name"]:
        assert option in text


@pytest.mark.parametrize("cores, processes, envs, threads", [
    (1, 1, 32, 1), (2, 1, 32, 1), (4, 3, 10, 1), (16, 12, 8, 4),
])
def test_layout_gives_the_learner_its_own_cores(cores, processes, envs, threads):
    for preset in (atari_preset(cores, bf16=False), nature84_preset(cores), vector_preset(cores)):
        assert (preset.processes, preset.envs_per_process, preset.learner_threads) == (processes, envs, threads)
    if cores != 2:
        assert small_preset(cores).processes == processes
        assert atari_preset(cores, bf16=True).processes == processes


def test_with_bfloat16_the_atari_defaults_are_nature84_in_bfloat16_with_a_child_on_each_of_2_cores():
    """The learner's bfloat16 steps leave it time to spare, so on 2 cores a child runs on each;
    without bfloat16 instructions the defaults are ``--preset nature84``, float32 on 84 pixels."""
    assert atari_preset(2, bf16=False) == nature84_preset(2)
    assert nature84_preset(2).bf16 is False
    fast = atari_preset(2, bf16=True)
    assert (fast.bf16, fast.processes, fast.envs_per_process, fast.learner_threads) == (True, 2, 16, 1)
    changed = {name for name, value in dataclasses.asdict(fast).items() if getattr(nature84_preset(2), name) != value}
    assert changed == {"bf16", "processes", "envs_per_process"}
    default, nature84 = parse_config(["-n", "d"]), parse_config(["-n", "d", "--preset", "nature84"])
    assert (default.screen_size, default.bf16) == (84, ATARI_PRESET.bf16)
    assert (nature84.screen_size, nature84.bf16, nature84.processes) == (84, False, NATURE84_PRESET.processes)
    on_cuda = parse_config(["-n", "d", "--cuda"])  # bfloat16 by default on the CPU only
    assert (on_cuda.bf16, on_cuda.processes) == (False, NATURE84_PRESET.processes)
    assert parse_config(["-n", "d", "--env", "CartPole-v1"]).bf16 is False


def test_the_small_nets_learner_shares_the_childrens_cores_on_two():
    preset = small_preset(2)
    assert (preset.processes, preset.envs_per_process, preset.learner_threads, preset.conv) == (2, 16, 1, "small")


def test_default_queue_holds_two_learner_batches():
    a3c = get_algorithm("a3c")

    def capacity(config):
        return queue_capacity(a3c, config)

    one_child = parse_config(["-n", "q", "--processes", "1", "--envs-per-process", "32"])
    assert capacity(one_child) == 8  # 2 x 128 transitions in micro-batches of 32
    assert messages_per_worker(a3c, one_child) == 8
    many = parse_config(["-n", "q", "--processes", "8", "--envs-per-process", "64"])
    assert capacity(many) == 16  # two per child wins over 2 x 128 / 64 = 4
    grads = parse_config(["-n", "q", "--mode", "grads", "--processes", "1"])
    assert capacity(grads) == 2  # one gradient is a whole batch
    assert capacity(parse_config(["-n", "q", "--queue-size", "5"])) == 5


@pytest.mark.parametrize("cores, atari, processes, envs", [
    (2, True, 2, 16), (2, False, 2, 8),  # data mode: 1 x 32 on 2 cores
    (16, True, 16, 6), (16, False, 16, 3),  # data mode: 12 x 8 on 16 cores
])
def test_grads_mode_gives_the_children_every_core_keeping_atari_envs_halving_vector_envs(
        cores, atari, processes, envs):
    preset = nature84_preset(cores) if atari else vector_preset(cores)
    layout = grads_layout(preset, cores, atari)
    assert (layout.processes, layout.envs_per_process) == (processes, envs)


def test_grads_mode_layout_is_the_one_for_this_machine():
    grads = parse_config(["-n", "g", "--env", "CartPole-v1", "--mode", "grads"])
    expected = grads_layout(vector_preset(CORES), CORES, atari=False)
    assert (grads.processes, grads.envs_per_process) == (expected.processes, expected.envs_per_process)


def test_reference_preset_keeps_the_reference_chapters_values_for_any_env():
    for env in ("PongNoFrameskip-v4", "CartPole-v1"):
        config = parse_config(["-n", "r", "--env", env, "--preset", "reference"])
        assert (config.lr, config.adam_eps, config.clip_grad, config.reward_steps, config.batch_size,
                config.entropy_beta, config.value_weight) == (1e-3, 1e-3, 0.1, 4, 128, 0.01, 1.0)
    tuned = parse_config(["-n", "r", "--preset", "reference", "--adam-eps", "1e-5"])
    assert tuned.adam_eps == 1e-5 and tuned.preset == "reference"


def test_small_preset_is_nature84_on_the_small_net_and_is_a3cs_alone():
    small = parse_config(["-n", "s", "--preset", "small"])
    assert (small.conv, small.heads) == ("small", "shared")
    assert dataclasses.asdict(SMALL_PRESET) == {name: getattr(small, name) for name in dataclasses.asdict(SMALL_PRESET)}
    changed = {name for name, value in dataclasses.asdict(SMALL_PRESET).items()
               if getattr(NATURE84_PRESET, name) != value}
    assert changed <= {"conv", "processes", "envs_per_process", "learner_threads"}
    assert parse_config(["-n", "s"]).conv == "nature"
    # the vector family has no conv body to change: its defaults stand
    cartpole = parse_config(["-n", "s", "--env", "CartPole-v1", "--preset", "small"])
    assert cartpole.lr == VECTOR_PRESET.lr and cartpole.processes == VECTOR_PRESET.processes
    with pytest.raises(ConfigError, match="--preset of --algo dqn must be one of default, got 'small'"):
        make_config(algo="dqn", preset="small")


@pytest.mark.parametrize("algo", ["sac", "dqn", "qmix"])
def test_an_algorithms_help_shows_the_runs_settings_and_its_own_and_no_other_algorithms(capsys, algo):
    with pytest.raises(SystemExit) as exited:
        parse_config(["--algo", algo, "--help"])
    assert exited.value.code == 0
    text = capsys.readouterr().out
    own = {flag(setting) for setting in SETTINGS if algo in OWNERS.get(setting.name, (algo,))}
    others = {flag(setting) for setting in SETTINGS} - own
    assert own and others
    assert all(f" {option}" in text for option in own), sorted(o for o in own if f" {o}" not in text)
    listed = {line.split()[0].rstrip(",") for line in text.splitlines() if line.startswith("  -")}
    assert listed & others == set()
    assert f"--algo {algo}:" in text and "--max-frames" in text  # its group, and the run's settings


def test_help_alone_is_the_default_algorithms_and_names_every_algorithm(capsys):
    with pytest.raises(SystemExit):
        parse_config(["--help"])
    text = capsys.readouterr().out
    assert "--algo a3c:" in text and "--mode" in text and "--replay-size" not in text
    assert "a3c, dqn, ppo, maddpg, qmix, mappo, sac, td3" in text


def test_help_shows_no_default_of_none(capsys):
    with pytest.raises(SystemExit):
        parse_config(["--help"])
    assert "(default: None)" not in capsys.readouterr().out


def test_rewards_are_clipped_for_atari_by_default_and_on_request_elsewhere():
    assert parse_config(["-n", "c"]).clip_rewards
    assert not parse_config(["-n", "c", "--no-clip-rewards"]).clip_rewards
    assert not parse_config(["-n", "c", "--env", "CartPole-v1"]).clip_rewards
    assert parse_config(["-n", "c", "--env", "CartPole-v1", "--clip-rewards"]).clip_rewards


def test_every_config_field_is_one_flag_and_one_keyword_with_its_help():
    parser = build_parser()
    flags = {option for action in parser._actions for option in action.option_strings}
    for setting in SETTINGS:
        assert flag(setting) in flags and setting.metadata["help"], setting.name
    assert len(KEYWORDS) == len(SETTINGS) and KEYWORDS["env"].name == "env_id"
    # parsing the flags and passing the same values as keywords make the same Config
    argv = ["-n", "same", "--env", "CartPole-v1", "--lr", "0.002", "--no-collapse-rollback", "--mode", "grads"]
    assert parse_config(argv) == make_config(name="same", env="CartPole-v1", lr=0.002,
                                             collapse_rollback=False, mode="grads")


def test_dqn_replay_settings_come_from_the_env_family_and_flags_override():
    pong = parse_config(["-n", "p", "--algo", "dqn", "--replay-size", "50000"])
    assert (pong.replay_size, pong.replay_ratio, pong.learning_starts, pong.target_sync, pong.epsilon_base) == (
        50_000, 2.0, 20_000, 2_000, 0.4)
    cartpole = parse_config(["-n", "c", "--env", "CartPole-v1", "--algo", "dqn"])
    assert (cartpole.replay_size, cartpole.replay_ratio, cartpole.target_sync, cartpole.epsilon_base) == (
        100_000, 4.0, 250, 0.05)


def test_what_only_the_backend_can_tell_is_one_line_and_exit_2_too(capsys, monkeypatch, tmp_path):
    from a3c.config import ConfigError

    def refuse(self, *args, **kwargs):  # as a Ray cluster with too few CPUs does when the pool starts
        raise ConfigError("--processes 9 needs 9 CPUs for actors and the cluster has 4 besides the learner's 1")

    monkeypatch.setattr(a3c.cli.Trainer, "train", refuse)
    with pytest.raises(SystemExit) as exited:
        a3c.cli.main(["-n", "x", "--env", "CartPole-v1", "--logdir", str(tmp_path)])
    stderr = capsys.readouterr().err
    assert exited.value.code == 2 and stderr.strip().splitlines() == [
        "run_a3c.py: error: --processes 9 needs 9 CPUs for actors and the cluster has 4 besides the learner's 1"]


def test_a3c_on_atari_reruns_5_step_sequences_and_everything_else_20():
    """A3C's batches of whole sequences hold many envs' rows on Atari (docs/spaces.md)."""
    assert parse_config(["-n", "x", "--lstm"]).seq_len == 5
    assert parse_config(["-n", "x", "--lstm", "--preset", "small"]).seq_len == 5
    assert parse_config(["-n", "x", "--lstm", "--algo", "ppo"]).seq_len == 20
    assert parse_config(["-n", "x", "--env", "CartPole-v1", "--lstm"]).seq_len == 20
    assert parse_config(["-n", "x", "--lstm", "--seq-len", "12"]).seq_len == 12


def test_the_installed_commands_are_the_scripts_entry_points():
    from importlib.metadata import entry_points

    import a3c.__main__
    import a3c.export
    import a3c.play
    import a3c.sweep

    commands = {point.name: point.load() for point in entry_points(group="console_scripts")
                if point.name.startswith("a3c-")}
    assert commands == {"a3c-train": a3c.__main__.train, "a3c-play": a3c.play.installed_command,
                        "a3c-sweep": a3c.sweep.installed_command, "a3c-export": a3c.export.installed_command}


def test_python_dash_m_a3c_is_the_train_command(tmp_path):
    # its bad input, found after Pong's env was made: one line and exit 2, as run_a3c.py's, and
    # nothing on stdout (ale-py's banner stays unprinted); a whole run: tests/test_end_to_end.py
    missing = tmp_path / "missing.pt"
    finished = subprocess.run([sys.executable, "-m", "a3c", "-n", "x", "--resume", str(missing),
                               "--logdir", str(tmp_path)],
                              capture_output=True, text=True, timeout=120, check=False)
    assert finished.returncode == 2
    assert finished.stderr.strip().splitlines() == [
        f"python -m a3c: error: --resume: checkpoint '{missing}' does not exist"]
    assert finished.stdout == "" and not any(tmp_path.iterdir())
