"""Your own network (``a3c.register_model``, ``custom_model``): the observation reaches it in
the env's structure, its features reach each algorithm's heads, it pickles by value and
shares its weights with a worker process that never saw its class, and a factory that fails
or gives the wrong shape is one line before any worker."""
import copy
import tempfile

import gymnasium as gym
import numpy as np
import pytest
import torch
from torch import nn

import a3c
import a3c.cli
from a3c import ConfigError, Trainer
from a3c.algos import get_algorithm
from a3c.config import make_config
from a3c.lib.custom_model import structured
from a3c.lib.envs import describe_env
from a3c.preflight import preflight
from a3c.transport.process_pool import child_context
from tests.custom_models import TanhLayer


def net_of(algo: str, env: str, **settings) -> nn.Module:
    config = make_config(name="m", env=env, algo=algo, **settings)
    return get_algorithm(algo).build_net(describe_env(env), vars(config))


def test_a_dict_observation_reaches_the_model_by_key_in_its_shapes():
    space = gym.spaces.Dict({"camera": gym.spaces.Box(0, 255, (40, 40, 3), np.uint8),
                             "kind": gym.spaces.Discrete(3), "speed": gym.spaces.Box(-1.0, 1.0, (2,))})
    camera = np.zeros((40, 40, 3), np.uint8)
    camera[1, 2, 0] = 51
    row = gym.spaces.flatten(space, {"camera": camera, "kind": 2, "speed": np.array([0.5, -0.25], np.float32)})
    got = structured(space, torch.as_tensor(np.stack([row, row])).float())
    assert set(got) == {"camera", "kind", "speed"}
    assert got["camera"].shape == (2, 40, 40, 3) and got["camera"][1, 1, 2, 0] == pytest.approx(0.2)
    assert got["camera"].sum() == pytest.approx(0.4)  # 51 / 255, once a row: scaled, in the env's own layout
    assert got["kind"].tolist() == [[0.0, 0.0, 1.0]] * 2  # one-hot
    assert got["speed"].tolist() == [[0.5, -0.25]] * 2


class Doubling(nn.Module):
    """Features known by hand: the observation times two."""

    def __init__(self, observation_space, config):
        super().__init__()
        self.features_dim = observation_space.shape[0]
        self.scale = nn.Parameter(torch.tensor(2.0))

    def forward(self, observations):
        return observations * self.scale


def test_the_features_reach_each_algorithms_heads():
    a3c.register_model("doubling", Doubling)
    model = {"custom_model": "doubling"}
    observations = torch.tensor([[0.1, -0.2, 0.3, 0.4], [1.0, 0.5, -0.5, 0.0]])
    features = 2 * observations
    for algo in ("a3c", "ppo"):
        net = net_of(algo, "CartPole-v1", model=model)
        logits, values = net(observations)
        assert torch.allclose(logits, net.policy(features)) and torch.allclose(values, net.value(features).squeeze(-1))
    recurrent = net_of("ppo", "CartPole-v1", model={**model, "use_lstm": True, "fcnet_hiddens": [8]})
    assert torch.allclose(recurrent.features(observations), recurrent.body[1](features))  # the cell reads these
    dqn = net_of("dqn", "CartPole-v1", model=model)
    q_values, _ = dqn(observations)
    assert torch.allclose(q_values, dqn.head(dqn.body[1](features)))
    pendulum = torch.tensor([[0.5, 0.5, -1.0]])
    actions = torch.tensor([[0.25]])
    for algo in ("sac", "td3"):
        net = net_of(algo, "Pendulum-v1", model=model)
        head, _ = net(pendulum)
        assert torch.allclose(net.actor.mlp(2 * pendulum)[:, :1], head[:, :1])  # the mean of the one action
        assert torch.allclose(net.q_values(pendulum, actions)[:, 0],
                              net.critics[0].mlp(torch.cat([2 * pendulum, actions], dim=1)).squeeze(-1))
        # the actor and each critic read their own copy of the model
        parts = [net.actor.features, *(critic.features for critic in net.critics)]
        assert len({id(part.model.scale) for part in parts}) == 3


def test_a_module_class_in_a_users_file_builds_with_its_config_and_its_name():
    net = net_of("ppo", "CartPole-v1", model={"custom_model": "tests.custom_models:TanhLayer",
                                             "custom_model_config": {"width": 12}})
    assert net.encoder.size == 12 and net.policy[0].in_features == 12
    registered = net_of("ppo", "CartPole-v1", model={"custom_model": "tanh-layer"})
    assert registered.encoder.size == 32


def _report_weights(net, loaded, ready, sums):
    loaded.set()
    ready.wait(60)
    with torch.no_grad():
        sums.put(float(sum(parameter.sum() for parameter in net.encoder.model.parameters())))


def test_a_worker_process_shares_the_weights_of_a_model_it_never_saw_defined():
    class Local(nn.Module):  # defined here: only a copy by value can reach the child
        def __init__(self, observation_space, config):
            super().__init__()
            self.features_dim = 5
            self.layer = nn.Linear(observation_space.shape[0], 5)

        def forward(self, observations):
            return self.layer(observations)

    a3c.register_model("local", Local)
    net = net_of("a3c", "CartPole-v1", model={"custom_model": "local"})
    net.share_memory()
    context = child_context(shared_tensors=len(net.state_dict()), cuda=False)  # as the trainer's children start
    loaded, ready, sums = context.Event(), context.Event(), context.Queue()
    child = context.Process(target=_report_weights, args=(net, loaded, ready, sums))
    child.start()
    assert loaded.wait(60)
    with torch.no_grad():  # after the child has its copy: only shared memory shows it this
        for parameter in net.encoder.model.parameters():
            parameter.fill_(1.0)
    ready.set()
    assert sums.get(timeout=60) == 4 * 5 + 5
    child.join(30)
    twin = copy.deepcopy(net)  # a target net's way: a copy, its own weights
    assert torch.equal(twin(torch.ones(1, 4))[0], net(torch.ones(1, 4))[0])
    assert twin.encoder.model.layer.weight.data_ptr() != net.encoder.model.layer.weight.data_ptr()


@pytest.mark.parametrize("model, says", [
    ({"custom_model": "nobody"}, "--model custom_model 'nobody' is not registered (registered: "),
    ({"custom_model": "tests.custom_models:broken"},
     "--model custom_model 'tests.custom_models:broken' failed: RuntimeError: no layer called 'dense'"),
    ({"custom_model": "tests.custom_models:without_features_dim"},
     "--model custom_model 'tests.custom_models:without_features_dim': the module needs features_dim"),
    ({"custom_model": "tests.custom_models:wrong_width"},
     ("--model custom_model 'tests.custom_models:wrong_width': on a batch of 2 observations it gave (2, 8), "
      "not (2, 9) floats")),
    ({"custom_model": "tests.custom_models:not_a_module"},
     "--model custom_model 'tests.custom_models:not_a_module': its factory returned str, not a torch.nn.Module"),
    ({"custom_model": "tests.missing_module:net"},
     "--model custom_model 'tests.missing_module:net': ModuleNotFoundError"),
])
def test_a_model_that_cannot_serve_is_one_line_before_any_worker(model, says):
    with pytest.raises(ConfigError) as raised:
        preflight(make_config(name="m", env="CartPole-v1", algo="ppo", model=model))
    assert str(raised.value).startswith(says) and "\n" not in str(raised.value)


def test_on_several_agents_the_model_reads_each_agents_own_observation_under_every_algorithms_heads():
    # TwoStepGame: each agent observes a one-hot of 3; its row is [every agent's 3 (mappo's critic
    # only), its own 3, its one-hot index of 2]; the model doubles its own 3 and the index follows
    a3c.register_model("doubling", Doubling)
    model = {"custom_model": "doubling"}
    own = torch.tensor([[0.0, 1.0, 0.0], [0.0, 0.0, 1.0]])
    index = torch.tensor([[1.0, 0.0], [0.0, 1.0]])
    rows, features = torch.cat([own, index], dim=1), torch.cat([2 * own, index], dim=1)
    every = torch.tensor([[0.0, 1.0, 0.0, 0.0, 1.0, 0.0], [0.0, 0.0, 1.0, 0.0, 0.0, 1.0]])
    ppo = net_of("ppo", "TwoStepGame", model=model, policies="shared")
    logits, values = ppo(rows)
    inner = ppo.nets["shared"]
    assert torch.allclose(logits, inner.policy(features)) and torch.allclose(values, inner.value(features).squeeze(-1))
    config = make_config(name="m", env="TwoStepGame", algo="mappo", model=model, policies="shared")
    mappo = get_algorithm("mappo").build_net(describe_env("TwoStepGame", global_state=True), vars(config)).nets["shared"]
    logits, values = mappo(torch.cat([every, rows], dim=1))
    assert torch.allclose(logits, mappo.policy(features))
    assert torch.allclose(values, mappo.value(torch.cat([every, features], dim=1)).squeeze(-1))
    assert torch.allclose(mappo(rows)[0], logits)  # play's rows, without everyone's observations
    qmix = net_of("qmix", "TwoStepGame", model=model)
    assert torch.allclose(qmix(rows)[0], qmix.agent_q.net.mlp(features))
    maddpg = net_of("maddpg", "TwoStepGame", model=model, policies="shared")
    actor = maddpg.actors.nets["shared"]
    assert torch.allclose(maddpg(rows)[0], actor.policy.mlp(features))
    per_agent = net_of("maddpg", "TwoStepGame", model=model)  # each policy's actor its own copy of the model
    assert len({id(actor.policy.features.model.scale) for actor in per_agent.actors.nets.values()}) == 2


@pytest.mark.timeout(120)
def test_mappo_with_a_users_model_learns_the_two_step_game():
    with Trainer(env="TwoStepGame", algo="mappo", backend="serial", processes=1, envs_per_process=8,
                 logdir=tempfile.mkdtemp(), name="m", model={"custom_model": "tests.custom_models:TanhLayer"}, seed=0,
                 max_frames=40_000) as trainer:
        while not (result := trainer.train())["done"]:
            pass
    assert result["reason"] == "solved", result  # the coordinated 8; 7 without it


@pytest.mark.parametrize("settings, says", [
    ({"model": {"custom_model_config": {"width": 3}}}, "--model custom_model_config is for a custom_model"),
    ({"env": "PongNoFrameskip-v4", "model": {"custom_model": "x", "conv_filters": [[16, 8, 4]]}},
     "--model custom_model and conv_filters are given both"),
    ({"model": {"custom_model": TanhLayer}}, "--model custom_model must be a registered model's name"),
    ({"algo": "qmix", "env": "TwoStepGame", "model": {"custom_model": "tanh-layer", "use_lstm": True}},
     "--model use_lstm: --algo qmix's nets cannot honour it"),
])
def test_custom_model_settings_that_cannot_apply(settings, says):
    with pytest.raises(ConfigError, match=says.replace("(", r"\(").replace(")", r"\)")):
        make_config(name="m", **{"env": "CartPole-v1", **settings})


def test_the_command_line_refuses_a_broken_model_in_one_line_with_exit_2(tmp_path, capsys):
    with pytest.raises(SystemExit) as exited:
        a3c.cli.main(["-n", "x", "--env", "CartPole-v1", "--logdir", str(tmp_path),
                      "--model", '{"custom_model": "tests.custom_models:broken"}'])
    assert exited.value.code == 2
    assert capsys.readouterr().err.strip().splitlines() == [
        ("run_a3c.py: error: --model custom_model 'tests.custom_models:broken' failed: "
        "RuntimeError: no layer called 'dense'")]
    assert not any(tmp_path.iterdir())


@pytest.mark.timeout(180)
def test_a_dict_observation_model_trains_acts_and_exports(tmp_path):
    """SideImage's camera read by the user's conv body (in this process: the workers'
    copy is the test above's); the checkpoint names the model by module, so play's
    compute_action and the export build it again."""
    model = {"custom_model": "tests.custom_models:CameraAndSpeed"}
    with Trainer(env="tests.toy_envs:SideImage-v0", algo="ppo", backend="serial", processes=1, envs_per_process=8,
                 logdir=str(tmp_path), name="side", model=model, seed=1) as trainer:
        result = {"episode_reward_mean": 0.0, "frames": 0}
        while result["episode_reward_mean"] < 9.0 and result["frames"] < 150_000:
            result = trainer.train(frames=5000)
        assert result["episode_reward_mean"] >= 9.0  # random play: 5 of 10
        saved = trainer.save(tmp_path / "saved")
    restored = Trainer.restore(saved)
    env = gym.make("tests.toy_envs:SideImage-v0")
    observation, _ = env.reset(seed=3)
    assert restored.compute_action(observation, greedy=True) == env.unwrapped.side
    restored.export_policy(tmp_path / "exported", "torchscript")
    policy = torch.jit.load(str(tmp_path / "exported" / "policy.pt"))
    row = torch.as_tensor(gym.spaces.flatten(env.observation_space, observation))[None]
    assert int(policy(row)[0][0]) == env.unwrapped.side
