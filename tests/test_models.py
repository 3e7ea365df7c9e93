"""The nets' input handling and the children's action sampling."""
import pytest
import torch

from a3c.lib.distributions import CATEGORICAL
from a3c.lib.models import SCALING_CHUNK, AtariA2C, MlpA2C, evaluate, scaled_channels_last


def test_sampled_actions_follow_the_softmax_of_the_logits():
    torch.manual_seed(0)
    logits = torch.log(torch.tensor([[0.7, 0.2, 0.1], [0.05, 0.05, 0.9]]))
    draws = 20_000
    actions = CATEGORICAL.sample(logits.repeat(draws, 1)).view(draws, 2)
    for row, probabilities in enumerate(torch.softmax(logits, -1)):
        frequencies = torch.bincount(actions[:, row], minlength=3).float() / draws
        # 4 standard errors of a frequency near p over 20k draws is at most 0.015
        assert torch.allclose(frequencies, probabilities, atol=0.015), (row, frequencies)


def test_a_dominant_logit_is_always_sampled_and_is_greedy():
    logits = torch.tensor([[0.0, 50.0, 0.0]]).repeat(100, 1)
    assert CATEGORICAL.sample(logits).eq(1).all()
    assert CATEGORICAL.greedy(logits).eq(1).all()


def test_channels_last_conv_net_matches_the_plain_layout():
    """The channels-last weights and activations change speed, not the function computed."""
    torch.manual_seed(0)
    net = AtariA2C((4, 84, 84), 6)
    frames = torch.randint(0, 256, (3, 4, 84, 84), dtype=torch.uint8)
    logits, values = net(frames)
    scaled = frames.float() / 255.0
    features = scaled
    for layer in net.conv:
        features = (torch.nn.functional.conv2d(features, layer.weight.contiguous(), layer.bias,
                                               layer.stride) if isinstance(layer, torch.nn.Conv2d)
                    else layer(features))
    torch.testing.assert_close(logits, net.policy(features), rtol=1e-4, atol=1e-5)
    torch.testing.assert_close(values, net.value(features).squeeze(-1), rtol=1e-4, atol=1e-5)
    assert net.conv[0].weight.is_contiguous(memory_format=torch.channels_last)
    assert net.state_dict()["conv.0.weight"].shape == (32, 4, 8, 8)


def test_frames_are_scaled_exactly_across_chunk_boundaries():
    """Two whole chunks and a partial one: every frame converted once, and scaled once."""
    frames = torch.randint(0, 256, (2 * SCALING_CHUNK + 3, 4, 84, 84), dtype=torch.uint8)
    scaled = scaled_channels_last(frames)
    assert torch.equal(scaled, frames.float() * (1 / 255.0))
    assert scaled.is_contiguous(memory_format=torch.channels_last)


def test_under_bf16_autocast_frames_are_scaled_straight_to_the_values_a_cast_would_give():
    """The conversion skips autocast's float32-to-bfloat16 pass: the first conv must get the
    same bfloat16 values, so the net's outputs and gradients stay exactly as before."""
    torch.manual_seed(0)
    net = AtariA2C((4, 84, 84), 6)
    frames = torch.randint(0, 256, (SCALING_CHUNK + 3, 4, 84, 84), dtype=torch.uint8)
    with torch.autocast("cpu", dtype=torch.bfloat16):
        scaled = scaled_channels_last(frames)
        logits, values = net(frames)
        (logits.float().sum() + values.float().sum()).backward()
        cast = (frames.float() * (1 / 255.0)).to(torch.bfloat16)
        features = net.body(net.conv(cast.contiguous(memory_format=torch.channels_last)))
        expected_logits, expected_values = net.policy(features), net.value(features).squeeze(-1)
    assert scaled.dtype == torch.bfloat16 and torch.equal(scaled, cast)
    assert scaled.is_contiguous(memory_format=torch.channels_last)
    assert torch.equal(logits, expected_logits) and torch.equal(values, expected_values)
    gradients = [p.grad.clone() for p in net.parameters()]
    net.zero_grad()
    (expected_logits.float().sum() + expected_values.float().sum()).backward()
    for mine, theirs in zip(gradients, (p.grad for p in net.parameters())):
        assert torch.equal(mine, theirs)


def test_mlp_critic_error_leaves_the_policy_untouched():
    """The vector net shares no weights: the value loss must not move the policy's parameters."""
    torch.manual_seed(0)
    net = MlpA2C(4, 2)
    logits, values = net(torch.randn(8, 4))
    values.square().sum().backward()
    critic = {id(p) for p in net.value.parameters()}
    reached = {id(p) for p in net.parameters() if p.grad is not None and p.grad.abs().sum() > 0}
    assert reached == critic
    assert logits.shape == (8, 2) and values.shape == (8,)


def test_bf16_evaluation_is_float32_and_close_to_the_float32_pass():
    torch.manual_seed(0)
    net = AtariA2C((4, 84, 84), 6)
    frames = torch.randint(0, 256, (8, 4, 84, 84), dtype=torch.uint8)
    conv_outputs = []
    net.conv[0].register_forward_hook(lambda _, __, output: conv_outputs.append(output.dtype))
    logits, values = evaluate(net, frames)
    mixed_logits, mixed_values = evaluate(net, frames, bf16=True)
    assert conv_outputs == [torch.float32, torch.bfloat16]
    assert mixed_logits.dtype == mixed_values.dtype == torch.float32
    # bfloat16 keeps about 3 significant digits through the conv body
    torch.testing.assert_close(mixed_logits, logits, rtol=0.05, atol=0.01)
    torch.testing.assert_close(mixed_values, values, rtol=0.05, atol=0.01)


def test_shared_heads_start_uniform_and_read_one_512_unit_layer():
    torch.manual_seed(0)
    net = AtariA2C((4, 84, 84), 6, heads="shared")
    frames = torch.randint(0, 256, (16, 4, 84, 84), dtype=torch.uint8)
    logits, values = net(frames)
    # logits' weights have gain 0.01 over unit-scale features: the policy starts uniform
    assert logits.abs().max() < 0.05 and values.shape == (16,)
    assert {name for name, _ in net.named_parameters()} == {
        "conv.0.weight", "conv.0.bias", "conv.2.weight", "conv.2.bias", "conv.4.weight", "conv.4.bias",
        "body.0.weight", "body.0.bias", "policy.weight", "policy.bias", "value.weight", "value.bias"}
    weight = net.body[0].weight  # orthogonal rows with gain sqrt 2
    assert torch.allclose(weight @ weight.T, 2 * torch.eye(512), atol=1e-4)


def test_the_small_body_is_the_a3c_papers_two_convolutions_under_256_shared_units():
    torch.manual_seed(0)
    net = AtariA2C((4, 84, 84), 6, heads="shared", conv="small")
    shapes = {name: tuple(parameter.shape) for name, parameter in net.named_parameters()}
    # 84 -> 20 after 8x8/4, -> 9 after 4x4/2: 32 * 9 * 9 features
    assert shapes == {"conv.0.weight": (16, 4, 8, 8), "conv.0.bias": (16,), "conv.2.weight": (32, 16, 4, 4),
                      "conv.2.bias": (32,), "body.0.weight": (256, 2592), "body.0.bias": (256,),
                      "policy.weight": (6, 256), "policy.bias": (6,), "value.weight": (1, 256), "value.bias": (1,)}
    logits, values = net(torch.randint(0, 256, (3, 4, 84, 84), dtype=torch.uint8))
    assert logits.shape == (3, 6) and values.shape == (3,) and logits.abs().max() < 0.05


def test_separate_heads_keep_the_reference_nets_parameter_names():
    names = {name for name, _ in AtariA2C((4, 84, 84), 6, heads="separate").named_parameters()}
    assert {name for name in names if not name.startswith("conv.")} == {
        "policy.0.weight", "policy.0.bias", "policy.2.weight", "policy.2.bias",
        "value.0.weight", "value.0.bias", "value.2.weight", "value.2.bias"}


@pytest.mark.parametrize("conv", ["nature", "small"])
def test_on_42_pixel_frames_the_first_layer_takes_half_the_patch_and_the_layers_above_stay(conv):
    """4x4/2 on 42 pixels maps to the same 20x20 grid as 8x8/4 on 84, so every weight but
    the first layer's has the shape it has on 84-pixel frames."""
    big = {name: p.shape for name, p in AtariA2C((4, 84, 84), 6, "shared", conv).named_parameters()}
    small = {name: p.shape for name, p in AtariA2C((4, 42, 42), 6, "shared", conv).named_parameters()}
    channels = big["conv.0.weight"][0]
    assert small.pop("conv.0.weight") == (channels, 4, 4, 4) and big.pop("conv.0.weight")[2:] == (8, 8)
    assert small == big
    logits, values = AtariA2C((4, 42, 42), 6, "shared", conv)(torch.zeros(2, 4, 42, 42, dtype=torch.uint8))
    assert logits.shape == (2, 6) and values.shape == (2,)
    # any other size (an env's own images) takes the layers as they are
    other = {name: p.shape for name, p in AtariA2C((4, 64, 64), 6, "shared", conv).named_parameters()}
    assert other.pop("conv.0.weight") == (channels, 4, 8, 8) and other.keys() == big.keys()
