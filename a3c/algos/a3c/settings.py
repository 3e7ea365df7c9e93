"""A3C's own settings and its presets per env family: values that solve Pong for Atari
(docs/learning.md), values measured on CartPole for vector observations, and the
reference chapter's Pong values (``--preset reference``). Pure: no torch; the one fact of
the machine read is whether its CPU has bfloat16 instructions (``CPU_BF16``)."""
from __future__ import annotations

import dataclasses
from dataclasses import dataclass

from a3c.algos.actor_critic import ActorCriticPreset, ActorCriticSettings
from a3c.options import CORES, CPU_BF16, option, process_layout

MODES = ("data", "grads")


@dataclass(frozen=True)
class A3CSettings(ActorCriticSettings):
    """A3C's own: its warm-up, advantages, and the two ways its workers can feed the learner."""

    lr_warmup: int = option("optimizer steps over which the learning rate rises linearly from 0",
                            None, at_least=0, family=True)
    lr_schedule: str = option("factors of --lr by frames, \"FRAMES:FACTOR,...\": linear between the "
                              "points, the first before them, the last after (\"0:2,4.5e6:2,4.6e6:1\": "
                              "twice the rate to 4.5M frames; empty: none)", "")
    return_lambda: float = option("lambda of the returns the workers send: each transition's "
                                  "lambda-return over its n-step window (1: the n-step return)", None,
                                  at_least=0.0, at_most=1.0, family=True)
    normalize_advantages: bool = option("standardise each batch's advantages before the policy term "
                                        "(Pong: a faster start, then a collapse; see docs/learning.md)", False)
    rho_bar: float = option("data mode: each row's policy-gradient term is weighted by min(RHO_BAR, "
                            "pi/mu), the learner's probability of its action over the acting "
                            "policy's (IMPALA's truncated importance weight against policy lag; "
                            "0: every row weighs 1)", 1.0, at_least=0.0)
    passes: int = option("data mode: optimizer steps on each batch, one after another (1: each "
                         "transition trained once)", 1, at_least=1)
    passes_from: int = option("data mode: frames before which the learner takes one step on each "
                              "batch (0: --passes from the start)", 0, at_least=0)
    passes_frames: int = option("data mode: frames after which the learner takes one step on each "
                                "batch again (0: --passes to the end of the run)", 0, at_least=0)
    mode: str = option("data: workers send transitions; grads: workers compute gradients on "
                       "their own batches and send those (A3C only)", "data", choices=MODES)
    grad_batch: int = option("grads mode: workers' gradients summed per optimizer step", 2,
                             at_least=1)
    max_policy_lag: int | None = option("grads mode: drop gradients older than this many optimizer "
                                        "steps", None, at_least=0)
    hold_weights: int = option("data mode: workers act with a copy of the weights that they renew only "
                               "once the learner is this many optimizer steps past it, which adds about "
                               "half as many steps of policy lag whatever the layout (to study lag; "
                               "0 or 1: the newest weights at every step)", 0, at_least=0)


def importance_weighted(config: A3CSettings) -> bool:
    """Whether rows carry the acting policy's log-probabilities and the learner weighs them:
    in data mode with ``rho_bar`` set. A grads-mode worker trains the very weights that acted,
    so its ratios are all 1."""
    return config.mode != "grads" and config.rho_bar > 0


@dataclass(frozen=True)
class A3CPreset(ActorCriticPreset):
    """Every family setting of A3C."""

    lr_warmup: int = 0
    return_lambda: float = 1.0


def reference_preset(cores: int) -> A3CPreset:
    """The reference chapter's Pong values (Adam lr 1e-3 eps 1e-3, clip 0.1, 4-step, batch
    128, entropy 0.01, value weight 1), with the layout from ``cores``: ``--preset reference``.
    With ``--lstm``, sequences of 5 steps: a batch of 128 rows then holds 26 envs' sequences,
    where 20-step ones gave 7 and Pong did not take off (docs/spaces.md, "Pong with --lstm")."""
    return A3CPreset(**process_layout(cores, envs_in_total=32), batch_size=128, reward_steps=4,
                     gamma=0.99, lr=1e-3, clip_grad=0.1, adam_eps=1e-3, seq_len=5)


def nature84_preset(cores: int) -> A3CPreset:
    """The reference layout and batch with what let the policy learn (docs/learning.md): a
    shared 512-unit layer over the Nature CNN under linear heads, a scale-free Adam (eps 1e-5)
    warmed up over 500 steps, lambda-returns (0.95) over 20-step windows, the value loss at
    half weight; float32, layout from ``cores``. The Atari defaults where the CPU has no bfloat16
    instructions (``--preset nature84`` anywhere)."""
    return dataclasses.replace(reference_preset(cores), heads="shared", adam_eps=1e-5, lr_warmup=500,
                               lr=7e-4, reward_steps=20, return_lambda=0.95, value_weight=0.5,
                               clip_grad=0.5)


def atari_preset(cores: int, bf16: bool) -> A3CPreset:
    """Where the CPU has bfloat16 instructions (``bf16``): ``nature84_preset`` under bfloat16
    autocast, with a worker on each of 2 cores, since the learner's steps then leave it time
    to spare (docs/performance.md, "bfloat16"). Elsewhere ``nature84_preset`` itself."""
    if not bf16:
        return nature84_preset(cores)
    layout = {"processes": 2, "envs_per_process": 16, "learner_threads": 1} if cores == 2 else {}
    return dataclasses.replace(nature84_preset(cores), bf16=True, **layout)


def small_preset(cores: int) -> A3CPreset:
    """``nature84_preset`` on the A3C paper's smaller conv body (``--preset small``): a third of
    the compute per frame. Its learner needs about half a core for what a worker sends, so on
    2 cores a worker runs on each and the learner takes turns with them; on more cores the
    learner keeps cores of its own (docs/performance.md, "The small net")."""
    layout = process_layout(cores, envs_in_total=32)
    if cores == 2:
        layout = {"processes": 2, "envs_per_process": 16, "learner_threads": 1}
    return dataclasses.replace(nature84_preset(cores), conv="small", **layout)


def vector_preset(cores: int) -> A3CPreset:
    """Values measured on CartPole-v1 (lr 3e-3, clip 1.0, entropy bonus 0.01, 32 envs); layout
    from ``cores``. 32 envs rather than 16: a worker's step costs little more, and frames to
    solve stay the same. The entropy bonus keeps runs from locking into one action
    (docs/learning.md, "CartPole")."""
    return A3CPreset(**process_layout(cores, envs_in_total=32), batch_size=128, reward_steps=4,
                     gamma=0.99, lr=3e-3, clip_grad=1.0, adam_eps=1e-3)


def grads_layout(preset: A3CPreset, cores: int, atari: bool) -> A3CPreset:
    """In grads mode the workers also train and the learner only sums and steps, so the
    workers get every core. Atari keeps the data-mode envs in total; vector envs are halved,
    which solved CartPole in fewer frames and no more time (docs/performance.md)."""
    data_envs = preset.processes * preset.envs_per_process
    envs_in_total = data_envs if atari else data_envs // 2
    return dataclasses.replace(preset, processes=cores, envs_per_process=max(1, envs_in_total // cores))


ATARI_PRESET = atari_preset(CORES, CPU_BF16)
NATURE84_PRESET = nature84_preset(CORES)
SMALL_PRESET = small_preset(CORES)
VECTOR_PRESET = vector_preset(CORES)
REFERENCE_PRESET = reference_preset(CORES)
