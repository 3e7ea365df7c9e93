"""The model config in RLlib's keys: each key checked in one line, the nets it builds (depth,
widths, activations, a shared trunk, conv layers) compared with what the keys say, the
defaults building the very nets the shorthand flags built, and a run's model config saved
with its checkpoint for play, compute_action and resume."""
import math

import pytest
import torch
from torch import nn

from a3c.algos import get_algorithm
from a3c.config import ConfigError, make_config, parse_config
from a3c.lib.envs import describe_env
from a3c.model_config import ModelConfig, check_model


def net_of(algo: str, env: str, **settings) -> nn.Module:
    config = make_config(name="m", env=env, algo=algo, **settings)
    return get_algorithm(algo).build_net(describe_env(env), vars(config))


def layers(module: nn.Module) -> list[str]:
    """Each leaf layer as ``Linear(in, out)``, ``Conv2d(in, out, k, s)`` or its class's name."""
    shown = []
    for layer in module.modules():
        if isinstance(layer, nn.Linear):
            shown.append(f"Linear({layer.in_features}, {layer.out_features})")
        elif isinstance(layer, nn.Conv2d):
            shown.append(f"Conv2d({layer.in_channels}, {layer.out_channels}, {layer.kernel_size[0]}, {layer.stride[0]})")
        elif not list(layer.children()) and not isinstance(layer, nn.Sequential):  # an empty body: no layer
            shown.append(type(layer).__name__)
    return shown


@pytest.mark.parametrize("model, says", [
    ({"fcnet_hidens": [8]}, "--model fcnet_hidens: not a model key; the keys are fcnet_hiddens, "),
    ({"attention_use_n_prev_actions": 1}, "--model attention_use_n_prev_actions: not built yet in this version"),
    ({"lstm_use_prev_reward": True}, "--model lstm_use_prev_reward: not built yet in this version"),
    ({"fcnet_hiddens": []}, "fcnet_hiddens must be a non-empty list of widths >= 1, got []"),
    ({"fcnet_hiddens": [64, 0]}, "fcnet_hiddens must be a non-empty list of widths >= 1, got [64, 0]"),
    ({"fcnet_hiddens": [True]}, "fcnet_hiddens must be a non-empty list"),
    ({"fcnet_activation": "gelu"}, "fcnet_activation must be one of relu, tanh, elu, silu, swish, linear, got 'gelu'"),
    ({"conv_filters": [[16, [8, 8]]]}, "conv_filters must be a non-empty list of [channels, [kernel_h, kernel_w], stride]"),
    ({"conv_filters": [[16, [8, 0], 4]]}, "conv_filters must be"),
    ({"vf_share_layers": 1}, "--model vf_share_layers must be true or false, got 1"),
    ({"lstm_cell_size": 0}, "--model lstm_cell_size must be a whole number >= 1, got 0"),
    ({"max_seq_len": 2.5}, "--model max_seq_len must be a whole number >= 1, got 2.5"),
])
def test_each_key_is_checked_in_one_line(model, says):
    with pytest.raises(ConfigError) as raised:
        check_model(model)
    assert says in str(raised.value) and "\n" not in str(raised.value)


def test_every_activation_the_config_takes_has_a_layer():
    from a3c import model_config
    from a3c.lib import models

    assert set(model_config.ACTIVATIONS) == set(models.ACTIVATIONS)  # the pure check's names, the nets' layers


def test_a_kernel_may_be_one_int_and_the_keys_read_as_given():
    model = check_model({"conv_filters": [[16, 8, 4], [32, [4, 3], 2]], "fcnet_hiddens": [64, 32],
                         "fcnet_activation": "tanh", "vf_share_layers": True})
    assert model == ModelConfig(fcnet_hiddens=(64, 32), fcnet_activation="tanh",
                                conv_filters=((16, (8, 8), 4), (32, (4, 3), 2)), vf_share_layers=True)


def test_fcnet_hiddens_and_activation_build_that_depth_and_compute_what_the_layers_say():
    net = net_of("a3c", "CartPole-v1", model={"fcnet_hiddens": [32, 16, 8], "fcnet_activation": "tanh"})
    assert layers(net.policy) == ["Linear(4, 32)", "Tanh", "Linear(32, 16)", "Tanh", "Linear(16, 8)", "Tanh",
                                  "Linear(8, 2)"]
    assert layers(net.value) == [*layers(net.policy)[:-1], "Linear(8, 1)"]
    observations = torch.randn(5, 4)
    by_hand = observations
    for linear in [net.policy[0], net.policy[2], net.policy[4]]:
        by_hand = torch.tanh(by_hand @ linear.weight.T + linear.bias)
    logits, _ = net(observations)
    assert torch.allclose(logits, by_hand @ net.policy[6].weight.T + net.policy[6].bias, atol=1e-6)


def test_vf_share_layers_puts_one_trunk_under_two_linear_outputs():
    net = net_of("ppo", "CartPole-v1", model={"fcnet_hiddens": [16], "vf_share_layers": True})
    assert layers(net) == ["Linear(4, 16)", "ReLU", "Linear(16, 2)", "Linear(16, 1)"]
    _, values = net(torch.randn(3, 4))
    values.sum().backward()  # the value's gradient reaches the trunk the policy reads
    assert net.trunk[0].weight.grad.abs().sum() > 0 and net.policy[0].weight.grad is None
    separate = net_of("ppo", "CartPole-v1", model={"fcnet_hiddens": [16]})
    assert layers(separate) == ["Linear(4, 16)", "ReLU", "Linear(16, 2)", "Linear(4, 16)", "ReLU", "Linear(16, 1)"]


def test_the_defaults_build_the_nets_the_shorthands_built():
    """The layers each algorithm built before the model config, which old checkpoints hold."""
    assert layers(net_of("a3c", "CartPole-v1")) == [
        "Linear(4, 128)", "ReLU", "Linear(128, 128)", "ReLU", "Linear(128, 2)",
        "Linear(4, 128)", "ReLU", "Linear(128, 128)", "ReLU", "Linear(128, 1)"]
    assert layers(net_of("dqn", "CartPole-v1")) == [
        "Linear(4, 128)", "ReLU", "Linear(128, 128)", "ReLU", "Linear(128, 2)", "Linear(128, 128)", "ReLU",
        "Linear(128, 1)"]
    assert layers(net_of("sac", "Pendulum-v1").actor) == [
        "Linear(3, 256)", "ReLU", "Linear(256, 256)", "ReLU", "Linear(256, 2)"]
    pong = layers(net_of("a3c", "PongNoFrameskip-v4"))
    assert pong[:6] == ["Conv2d(4, 32, 8, 4)", "ReLU", "Conv2d(32, 64, 4, 2)", "ReLU", "Conv2d(64, 64, 3, 1)", "ReLU"]
    assert pong[6:] == ["Flatten", "Linear(3136, 512)", "ReLU", "Linear(512, 6)", "Linear(512, 1)"]


def test_dqn_sac_and_td3_take_the_widths_and_the_activation():
    dqn = net_of("dqn", "CartPole-v1", model={"fcnet_hiddens": [64, 32], "fcnet_activation": "elu"})
    assert layers(dqn) == ["Linear(4, 64)", "ELU", "Linear(64, 32)", "ELU", "Linear(32, 2)", "Linear(64, 32)", "ELU",
                           "Linear(32, 1)"]  # the body, then the dueling head's two streams
    one = net_of("dqn", "CartPole-v1", model={"fcnet_hiddens": [16]}, dueling=False)
    assert layers(one) == ["Linear(4, 16)", "ReLU", "Linear(16, 2)"]
    for algo in ("sac", "td3"):
        net = net_of(algo, "Pendulum-v1", model={"fcnet_hiddens": [64], "fcnet_activation": "silu"})
        assert layers(net.actor)[:2] == ["Linear(3, 64)", "SiLU"]
        assert [layers(critic) for critic in net.critics] == [["Linear(4, 64)", "SiLU", "Linear(64, 1)"]] * 2


def test_the_multi_agent_nets_take_the_widths_and_the_activation():
    model = {"fcnet_hiddens": [16, 8], "fcnet_activation": "tanh"}

    def built(algo: str, **settings) -> nn.Module:
        config = make_config(name="m", env="TwoStepGame", algo=algo, **settings)
        return get_algorithm(algo).build_net(describe_env("TwoStepGame", global_state=algo == "mappo"), vars(config))

    # an agent's own row: the state's 3-way one-hot and its 2-way index; 2 actions each
    tanh_policy = ["Linear(5, 16)", "Tanh", "Linear(16, 8)", "Tanh", "Linear(8, 2)"]
    assert layers(built("mappo", model=model).nets["agent_0"].policy) == tanh_policy
    maddpg = built("maddpg", model=model)
    assert layers(maddpg.actors.nets["agent_0"]) == tanh_policy
    # a critic reads both agents' rows and actions: 2 * (5 + 2)
    assert layers(maddpg.critics[0]) == ["Linear(14, 16)", "Tanh", "Linear(16, 8)", "Tanh", "Linear(8, 1)"]
    assert layers(built("qmix", model=model).agent_q) == tanh_policy
    # the defaults: the layers these nets had before the model config (MAPPO's 128, QMIX's 64)
    assert layers(built("mappo").nets["agent_0"].policy)[:3] == ["Linear(5, 128)", "ReLU", "Linear(128, 128)"]
    assert layers(built("qmix").agent_q)[:3] == ["Linear(5, 64)", "ReLU", "Linear(64, 64)"]


def test_conv_filters_build_the_conv_body_and_are_refused_where_they_cannot_be():
    net = net_of("a3c", "PongNoFrameskip-v4", model={"conv_filters": [[16, [8, 8], 4], [32, [4, 4], 2]],
                                                      "fcnet_hiddens": [256]})
    side = math.floor((math.floor((84 - 8) / 4 + 1) - 4) / 2 + 1)  # 84 -> 20 -> 9
    assert layers(net)[:5] == ["Conv2d(4, 16, 8, 4)", "ReLU", "Conv2d(16, 32, 4, 2)", "ReLU", "Flatten"]
    assert layers(net)[5] == f"Linear({32 * side * side}, 256)"
    dqn = net_of("dqn", "PongNoFrameskip-v4", model={"conv_filters": [[16, 8, 4]]})
    assert layers(dqn)[:2] == ["Conv2d(4, 16, 8, 4)", "ReLU"]
    for env, model, says in [
        ("CartPole-v1", {"conv_filters": [[16, 8, 4]]}, "image observations; CartPole-v1 has none"),
        ("PongNoFrameskip-v4", {"conv_filters": [[16, 8, 4], [32, 8, 4], [64, 8, 4]]},
         "--model conv_filters: the layers shrink a 84x84 image to nothing")]:
        config = make_config(name="m", env=env, model=model)
        with pytest.raises(ConfigError, match=says):
            get_algorithm("a3c").preflight(config, describe_env(env))


def test_lstm_keys_are_the_settings_and_a_key_and_its_flag_are_not_both_given():
    config = parse_config(["-n", "m", "--env", "CartPole-v1", "--model",
                           '{"use_lstm": true, "lstm_cell_size": 32, "max_seq_len": 7}'])
    assert (config.lstm, config.lstm_cell_size, config.seq_len) == (True, 32, 7)
    assert config.model == {"use_lstm": True, "lstm_cell_size": 32, "max_seq_len": 7}
    same = make_config(name="m", env="CartPole-v1", lstm=True, model={"use_lstm": True})
    assert same.lstm
    for settings, says in [
        ({"mlp_hidden": 64, "model": {"fcnet_hiddens": [8]}}, "--model fcnet_hiddens and --mlp-hidden are given both"),
        ({"seq_len": 5, "model": {"max_seq_len": 7}}, "--model max_seq_len and --seq-len are given both"),
        ({"algo": "qmix", "env": "TwoStepGame", "model": {"use_lstm": True}},
         "--model use_lstm: --algo qmix's nets cannot honour it (the keys they take: fcnet_hiddens, fcnet_activation, custom_model, custom_model_config)"),
        ({"algo": "sac", "env": "Pendulum-v1", "model": {"vf_share_layers": True}},
         "--algo sac's nets cannot honour it (the keys they take: fcnet_hiddens, fcnet_activation, custom_model, custom_model_config)"),
        ({"model": {"use_lstm": True, "vf_share_layers": False}}, "with an LSTM or attention the policy and the value read one memory")]:
        with pytest.raises(ConfigError, match=says.replace("(", r"\(").replace(")", r"\)")):
            make_config(**{"name": "m", "env": "CartPole-v1", **settings})
    recurrent = net_of("a3c", "CartPole-v1", model={"use_lstm": True, "lstm_cell_size": 32, "fcnet_hiddens": [24]})
    assert recurrent.cell_size == 32 and "Linear(4, 24)" in layers(recurrent)


def test_the_model_config_goes_with_the_checkpoint_to_restore_and_resume(tmp_path):
    from a3c import Trainer
    from a3c.lifecycle.checkpoint import load_checkpoint

    model = {"fcnet_hiddens": [24, 12], "fcnet_activation": "tanh", "vf_share_layers": True}
    with Trainer(env="CartPole-v1", backend="serial", processes=1, envs_per_process=4, max_frames=400,
                 logdir=str(tmp_path), name="m", model=model) as trainer:
        while not trainer.train()["done"]:
            pass
        saved = trainer.save(tmp_path / "saved")
    assert load_checkpoint(saved)["config"]["model"] == model
    restored = Trainer.restore(saved)
    assert layers(restored.net)[:4] == ["Linear(4, 24)", "Tanh", "Linear(24, 12)", "Tanh"]
    assert restored.compute_action([0.0, 0.1, 0.0, -0.1], greedy=True) in (0, 1)
    resumed = parse_config(["--resume", str(saved), "--max-frames", "800"])
    assert resumed.model == model
    with pytest.raises(ConfigError, match=r"the checkpoint's net: .* --model '\{\"fcnet_hiddens\": \[24, 12\]"):
        Trainer.restore(saved, model={"fcnet_hiddens": [8]})
