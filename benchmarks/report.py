"""The benchmark's figures as a markdown report and a CartPole reward-against-time plot."""
from __future__ import annotations

import statistics
from pathlib import Path

from a3c.lib.envs import ATARI_FRAME_SKIP
from benchmarks.memory import memory_section
from benchmarks.mujoco import mujoco_section


def _row(*cells: object) -> str:
    return "| " + " | ".join(str(cell) for cell in cells) + " |"


def _probe_section(probe: dict, through_window: bool) -> list[str]:
    precision = ", inference and training under bfloat16 autocast" if probe.get("bf16") else ""
    pinned = " on one pinned core" if probe.get("pinned_core") is not None else ""
    when = (", one at each boundary of the Pong window's segments with the trainer paused"
            if through_window else "")
    one_core = probe.get("one_core")  # results from before the all-core rounds lack it

    def rates(key: str) -> list[str]:
        return [f"{probe[key]:,.0f}", *([f"{one_core[key]:,.0f}"] if one_core else [])]

    columns = ["every core running it", "one core, the others idle"] if one_core else ["per core per second"]
    lines = [
        (f"### Machine limit (one thread per stage{pinned}, median of {probe['rounds']} interleaved "
         f"rounds{when}{precision})"), "",
        _row("stage, per core per second", *columns), _row(*["-"] * (len(columns) + 1)),
        _row("Pong env steps (native vector env, preprocessing included)", *rates("env_steps_per_second_per_core")),
        _row(f"inference samples, batch {probe['inference_batch']}", *rates("inference_samples_per_second_per_core")),
        _row(f"training samples, batch {probe['training_batch']}", *rates("training_samples_per_second_per_core")),
        "",
        (f"One transition costs {probe['core_ms_per_transition']:.2f} core-ms with every core busy, so "
         f"{probe['cores']} cores train at most **{probe['bound_transitions_per_second']:,.0f} "
         f"transitions/s**."),
        (f"At that bound a million Pong frames ({ATARI_FRAME_SKIP} a transition) take at least "
         f"{1e6 / ATARI_FRAME_SKIP / probe['bound_transitions_per_second']:,.0f} s."),
    ]
    if one_core:
        lines.append(f"At the rates of one core with the others idle, {one_core['core_ms_per_transition']:.2f} "
                     f"core-ms and {one_core['bound_transitions_per_second']:,.0f} transitions/s.")
    lines += _round_bounds_line(probe.get("round_bounds", []))
    return [*lines, "", *_layout_lines(probe), f"CPU steal during the probe: {_share(probe.get('cpu_steal'))}.", ""]


def _round_bounds_line(bounds: list[float]) -> list[str]:
    """Each round's own bound, so that a reader sees whether the machine held its speed:
    a window whose rounds differ widely mixes fast and slow spans against one median."""
    if len(bounds) < 2:
        return []
    listed = ", ".join(f"{bound:,.0f}" for bound in bounds)
    return [(f"Each round's own bound, in the order taken: {listed} "
             f"(the slowest {min(bounds) / max(bounds):.0%} of the fastest).")]


def _layout_lines(probe: dict) -> list[str]:
    """The default layout's cap, where the run recorded it (older results did not)."""
    if "layout_cap_transitions_per_second" not in probe:
        return []
    layout, cap = probe["layout"], probe["layout_cap_transitions_per_second"]
    children = f"{layout['children']} child" + ("ren" if layout["children"] > 1 else "")
    threads = f"{layout['learner_threads']} thread" + ("s" if layout["learner_threads"] > 1 else "")
    return [(f"The default layout ({children}, each stepping and inferring on one core; the learner on "
             f"{threads}) can reach at most {cap:,.0f} transitions/s at these rates, "
             f"{cap / probe['bound_transitions_per_second']:.1%} of the bound: the slower side "
             "sets the pace."), ""]


def _share(fraction: float | None) -> str:
    """A steal fraction as a percentage; "not measured" where /proc/stat was missing."""
    return "not measured" if fraction is None else f"{fraction:.1%}"


def _pong_section(pong: dict) -> list[str]:
    ours = pong["ours"]
    lines = [
        "### Pong throughput", "",
        _row("figure", "this trainer", "SB3 A2C"), _row("-", "-", "-"),
        _row("trained transitions/s", f"{ours['transitions_per_second']:,.0f}",
             f"{pong['sb3']['transitions_per_second']:,.0f}" if "sb3" in pong else "skipped"),
        _row("frames/s", f"{ours['frames_per_second']:,.0f}",
             f"{pong['sb3']['frames_per_second']:,.0f}" if "sb3" in pong else "skipped"),
        _row("learner busy fraction", f"{ours['learner_busy_fraction']:.2f}", ""),
        _row("learner waiting on the queue", f"{ours['learner_wait_fraction']:.2f}", ""),
        _row("children blocked on a full channel (s/s, all children)",
             f"{ours['child_wait_seconds_per_second']:.2f}", ""),
        _row("policy lag (optimizer steps)", f"{ours['policy_lag']:.2f}", ""),
        _row("CPU steal during the run (time the hypervisor gave to other guests)",
             _share(ours.get("cpu_steal")), _share(pong["sb3"].get("cpu_steal")) if "sb3" in pong else ""),
        _row("peak RSS, summed over the process tree (MiB)", f"{ours.get('peak_rss_mib', 0):,.0f}", ""),
        _row("peak PSS, summed (MiB; shared pages counted once)", f"{ours.get('peak_pss_mib', 0):,.0f}", ""),
        _row("RSS at window start / end (MiB)",
             f"{ours.get('window_start_rss_mib', 0):,.0f} / {ours.get('window_end_rss_mib', 0):,.0f}", ""),
        "",
    ]
    if ours.get("paused_seconds"):
        lines.append(f"Every figure counts {len(ours['segment_transitions_per_second'])} segments, "
                     f"{ours['window_seconds']:.0f} running seconds in all, each starting "
                     f"{ours['settle_seconds']:.0f} s after the trainer resumed from a probe round.")
    if "fraction_of_bound" in pong:
        of_cap = (f" ({pong['fraction_of_layout_cap']:.1%} of its layout's cap)"
                  if "fraction_of_layout_cap" in pong else "")
        one_core = (f"; {pong['fraction_of_one_core_bound']:.1%} of the one-core-at-a-time bound"
                    if "fraction_of_one_core_bound" in pong else "")
        lines.append(f"This trainer reaches **{pong['fraction_of_bound']:.1%} of the probed bound**{of_cap}"
                     f"{one_core}.")
    if "segment_fractions_of_bound" in pong:
        fractions = pong["segment_fractions_of_bound"]
        lines.append(f"Its {len(fractions)} segments, each against the bound of the probe rounds on either "
                     f"side: {min(fractions):.1%} to {max(fractions):.1%}, median "
                     f"{statistics.median(fractions):.1%}.")
    if "side_speeds" in pong:
        speeds = pong["side_speeds"]
        lines.append(f"Inside the window, per second not spent waiting, the learner trained at "
                     f"{speeds['learner']:.1%} of the probed training rate and the children acted at "
                     f"{speeds['children']:.1%} of the probed env step plus inference.")
    if "ratio_to_sb3" in pong:
        lines.append(f"Throughput ratio to SB3 A2C: **{pong['ratio_to_sb3']:.2f}x**.")
    return [*lines, "", f"Trainer command: `{ours['command']}`", ""]


def _cartpole_section(cartpole: dict, title: str = "CartPole-v1 to the 475 bound", peer: str = "SB3 A2C",
                      image: str | None = "cartpole.png") -> list[str]:
    lines = [f"### {title} (wall time from launch, each seed)", "",
             _row("seed", "this trainer: seconds", "frames", f"{peer}: seconds", "frames"),
             _row("-", "-", "-", "-", "-")]
    sb3_runs = cartpole.get("sb3", [])
    for index, ours in enumerate(cartpole["ours"]):
        sb3 = sb3_runs[index] if index < len(sb3_runs) else None
        lines.append(_row(
            ours["seed"], _solve_cell(ours), f"{ours['frames']:,}",
            _solve_cell(sb3) if sb3 else "skipped", f"{sb3['frames']:,}" if sb3 else "",
        ))
    lines.append(_row("median", f"{cartpole['ours_median_seconds']:.1f}",
                      f"{cartpole['ours_median_frames']:,.0f}",
                      f"{cartpole['sb3_median_seconds']:.1f}" if sb3_runs else "",
                      f"{cartpole['sb3_median_frames']:,.0f}" if sb3_runs else ""))
    if "time_ratio" in cartpole:
        bound = "" if all(run["solved"] for run in sb3_runs) else (
            f" at most: {peer} did not solve every seed within its limit, so its median time is"
            " at least the one shown")
        lines += ["", f"Median time ratio, this trainer / SB3: **{cartpole['time_ratio']:.2f}**{bound}."]
    lines += ["", f"CPU steal during these runs: {_share(cartpole.get('cpu_steal'))}."]
    if image is None:
        return [*lines, ""]
    return [*lines, "", f"![CartPole mean-100 reward against wall time]({image})", ""]


def _modes_section(modes: dict) -> list[str]:
    lines = ["### Data-parallel against gradient-parallel", "",
             _row("mode", "Pong transitions/s", "Pong frames/s", "Pong policy lag",
                  "CartPole median seconds", "CartPole median frames", "all seeds solved"),
             _row("-", "-", "-", "-", "-", "-", "-")]
    for mode, figures in modes.items():
        lines.append(_row(
            f"`--mode {mode}`", f"{figures['pong_transitions_per_second']:,.0f}",
            f"{figures['pong_frames_per_second']:,.0f}", f"{figures['pong_policy_lag']:.2f}",
            f"{figures['cartpole_median_seconds']:.1f}", f"{figures['cartpole_median_frames']:,.0f}",
            "yes" if figures["cartpole_all_solved"] else "no",
        ))
    return [*lines, ""]


def _solve_section(solve: dict) -> list[str]:
    """Pong to the goal at the defaults: per seed the minutes and frames to the goal (or the
    best mean-100 reached) and the early signals; SB3 A2C over the same wall time."""
    goal = solve["goal"]
    lines = [f"### Pong to a mean-100 of {goal:g}, from scratch at the defaults", "",
             _row("run", "reached the goal", "minutes", "frames", "entropy over the first 2M frames",
                  "mean-100 at 4M / 6M frames", "early signals"),
             _row("-", "-", "-", "-", "-", "-", "-")]
    for run in solve["ours"]:
        early = run["early"]
        entropy = early.get("2M", {}).get("policy_entropy")
        rewards = [early.get(mark, {}).get("mean_reward_100") for mark in ("4M", "6M")]
        verdict = {True: "learning", False: "stuck", None: "n/a"}[run["learning_early"]]
        lines.append(_row(f"this trainer, seed {run['seed']}", "yes" if run["solved"] else "no",
                          f"{run['wall_seconds'] / 60:.1f}", f"{run['frames']:,}",
                          "n/a" if entropy is None else f"{entropy:.3f}",
                          " / ".join("n/a" if reward is None else f"{reward:.1f}" for reward in rewards),
                          verdict))
    if "sb3" in solve:
        sb3 = solve["sb3"]
        best = max((reward for _, _, reward in sb3["curve"] if reward is not None), default=None)
        kept = f" (kept from {sb3['kept_from']})" if "kept_from" in sb3 else ""
        lines.append(_row(f"SB3 A2C, RL-zoo Atari values, seed 0{kept}", "yes" if sb3["solved"] else "no",
                          f"{sb3['wall_seconds'] / 60:.1f}", f"{sb3['frames']:,}", "", "",
                          "" if best is None else f"best mean-100 {best:.1f}"))
    if "runs_from" in solve:
        source = solve["runs_from"]
        lines += ["", f"These runs: `{source['command']}` on {source['date']}, commit {source['commit']}."]
    settings = [_settings_line(run["settings"]) for run in solve["ours"] if "settings" in run]
    if settings:
        lines += ["", "The defaults on this machine: " + "; ".join(dict.fromkeys(settings)) + "."]
    return [*lines, "", "![Pong mean-100 reward against minutes and frames](pong_solve.png)", ""]


def _settings_line(settings: dict) -> str:
    precision = "bfloat16 autocast" if settings.get("bf16") else "float32"
    net = f"the {settings.get('conv') or 'nature'} conv body"
    return (f"{settings.get('screen_size') or 84}-pixel frames, {precision}, {net}, "
            f"{settings['processes']} {'child' if settings['processes'] == 1 else 'children'} x "
            f"{settings['envs_per_process']} envs")


def plot_solve(solve: dict, path: Path) -> None:
    """Mean-100 reward against wall minutes (left) and env frames (right), a line a run (named
    by its ``label``, else its seed)."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    figure, (by_time, by_frames) = plt.subplots(1, 2, figsize=(11, 4), sharey=True)
    runs = [(run.get("label", f"seed {run['seed']}"), "-", run) for run in solve["ours"]]
    if "sb3" in solve:
        runs.append(("SB3 A2C (RL zoo)", "--", solve["sb3"]))
    for label, style, run in runs:
        points = [(t, frames, reward) for t, frames, reward in run["curve"] if reward is not None]
        by_time.plot([t / 60 for t, _, _ in points], [r for _, _, r in points], style, label=label)
        by_frames.plot([f / 1e6 for _, f, _ in points], [r for _, _, r in points], style, label=label)
    for axes in (by_time, by_frames):
        axes.axhline(solve["goal"], color="grey", linewidth=0.8)
    by_time.set_xlabel("wall minutes from launch")
    by_frames.set_xlabel("env frames (millions)")
    by_time.set_ylabel("mean reward of the last 100 episodes")
    by_time.set_title("PongNoFrameskip-v4, 2 CPU cores")
    by_time.legend()
    figure.tight_layout()
    figure.savefig(path, dpi=100)
    plt.close(figure)


def _solve_cell(run: dict) -> str:
    return f"{run['wall_seconds']:.1f}" + ("" if run["solved"] else " (not solved)")


def _denormals_section(denormals: dict) -> list[str]:
    if not denormals["supported"]:
        return ["### Flushing denormals", "", "This CPU has no mode that flushes denormals.", ""]
    return [
        "### Flushing denormals", "",
        (f"The learner's fused Adam step on the Pong net ({denormals['parameters']:,} parameters), with "
         f"{denormals['dead_share']:.0%} of each layer's units dead (zero gradients, denormal first "
         f"moments): {denormals['unflushed_ms']:.1f} ms computing the denormals, "
         f"{denormals['flushed_ms']:.1f} ms flushing them, as the trainer does: "
         f"**{denormals['slowdown']:.1f}x**."), "",
    ]


def _header(title: str, results: dict) -> list[str]:
    machine = results["machine"]
    versions = ", ".join(f"{name} {version}" for name, version in machine["versions"].items())
    return [
        f"# {title}", "",
        f"Command: `{results['command']}`", "",
        f"Date: {machine.get('date', 'not recorded')}; commit {machine.get('commit', 'not recorded')}.", "",
        (f"Machine: {machine['cpu']}, {machine['cores']} cores, {machine['memory_gib']} GiB; "
         f"{machine['platform']}."), "",
        f"Versions: {versions}.", "",
        *([f"Other processes' share of the cores before the run: {machine['busy_before']:.0%}.", ""]
          if machine.get("busy_before") is not None else []),
    ]


def solve_report(results: dict) -> str:
    """The solve part alone, for docs/pong_solve.md."""
    return "\n".join([*_header("Pong solved at the defaults", results), *_solve_section(results["solve"])])


def dqn_report(results: dict) -> str:
    return "\n".join([*_header("Off-policy: --algo dqn against SB3 DQN", results),
                      *_dqn_section(results["dqn"])])


def ppo_report(results: dict) -> str:
    return "\n".join([*_header("PPO: --algo ppo against SB3 PPO", results),
                      *_ppo_section(results["ppo"])])


def _ppo_section(ppo: dict) -> list[str]:
    return _cartpole_section(ppo, "`--algo ppo` against SB3 PPO: CartPole-v1 to 475", "SB3 PPO (RL zoo)",
                             image=None)


PENDULUM_REPORTS = {
    "box": ("Box actions: --algo ppo against SB3 PPO on Pendulum-v1",
            "`--algo ppo --preset box --gamma 0.9` against SB3 PPO (RL zoo, gSDE)", "SB3 PPO (RL zoo)"),
    "sac": ("SAC: --algo sac against SB3 SAC on Pendulum-v1", "`--algo sac` at its defaults against SB3 SAC (RL zoo)",
            "SB3 SAC (RL zoo)"),
    "td3": ("TD3: --algo td3 against SB3 TD3 on Pendulum-v1", "`--algo td3` at its defaults against SB3 TD3 (RL zoo)",
            "SB3 TD3 (RL zoo)"),
}
"""Each Pendulum part's page title, its section's heading and its peer's name."""


def pendulum_report(results: dict, part: str) -> str:
    """docs/PART_benchmark.md: a Pendulum part (``benchmarks.run.PENDULUM_PARTS``) against its peer."""
    title, heading, peer = PENDULUM_REPORTS[part]
    return "\n".join([*_header(title, results), *_cartpole_section(
        results[part], f"{heading}: Pendulum-v1 to a mean-100 of -200", peer, image=None)])


def mujoco_report(results: dict) -> str:
    return "\n".join([*_header("MuJoCo: --algo ppo against SB3 PPO on HalfCheetah-v5", results),
                      *mujoco_section(results["mujoco"]),
                      f"CPU steal during these runs: {_share(results['mujoco'].get('cpu_steal'))}.", ""])


def memory_report(results: dict) -> str:
    return "\n".join([*_header("Memory: the cue task with and without --lstm", results), *memory_section(results["memory"])])


def multiagent_report(results: dict) -> str:
    return "\n".join([*_header("Several agents in one env", results), *_multiagent_section(results["multiagent"])])


def _multiagent_section(multiagent: dict) -> list[str]:
    lines = ["### The two-step game: the team's mean-100 to 7.9 (the coordinated 8) within 50,000 env steps",
             "", "Frames count each agent's step: 100,000 frames are 50,000 env steps.", "",
             _row("algorithm", "seeds at 7.9", "frames to 7.9 (each solved seed)", "mean-100 at the end, per seed"),
             _row("-", "-", "-", "-")]
    for algo, runs in multiagent["two_step"].items():
        solved = [run for run in runs if run["solved"]]
        lines.append(_row(f"--algo {algo}", f"{len(solved)} of {len(runs)}",
                          ", ".join(f"{run['frames']:,}" for run in solved) or "-",
                          ", ".join(f"{run['final_mean_reward']:.2f}" for run in runs)))
    spread = multiagent.get("spread")
    if spread:
        lines += ["", f"### {spread['env']} (3 agents): the team's return for the same frames", "",
                  _row("algorithm", "frames", "wall seconds", "mean-100 at the end"), _row("-", "-", "-", "-")]
        for algo, run in spread["runs"].items():
            lines.append(_row(f"--algo {algo}", f"{run['frames']:,}", f"{run['wall_seconds']:.0f}",
                              f"{run['curve'][-1][1]:.2f}"))
        lines += [_row("random actions", "-", "-", f"{spread['random_team_return']:.2f}"), "",
                  "![simple_spread curves](multiagent_spread.png)", ""]
    return lines


def _dqn_section(dqn: dict) -> list[str]:
    return _cartpole_section(dqn, "`--algo dqn` against SB3 DQN: CartPole-v1 to 475", "SB3 DQN (RL zoo)",
                             image=None)


GPU_LEARNER_TRANSITIONS_PER_SECOND = 14_000
"""Measured once, on a lent H200 with batch 128 (docs/gpu_pong.json): it trained 10,850
Pong transitions/s at 76% busy. Not re-measured by this benchmark, which has no GPU."""
HOST_CORES = (8, 16, 32, 64)


def ray_report(results: dict) -> str:
    return "\n".join([*_header("The Ray backend: throughput and the costs of an actor", results),
                      *_ray_section(results["ray"])])


def _ray_section(ray: dict) -> list[str]:
    first, again = ray["mp"]
    costs = ray["costs"]
    lines = [
        f"### Pong, --backend ray against processes ({ray['ray']['window_seconds']:.0f}-second windows, in turn)", "",
        _row("backend", "transitions/s", "frames/s", "policy lag"), _row("-", "-", "-", "-"),
        *[_row(name, f"{run['transitions_per_second']:,.0f}", f"{run['frames_per_second']:,.0f}",
               f"{run['policy_lag']:.2f}")
          for name, run in (("processes (first)", first), ("ray", ray["ray"]), ("processes (again)", again))],
        "", f"Ray's throughput over the mean of the two process windows: **{ray['ratio']:.0%}**.", "",
        (f"### What one actor spends per transition ({costs['envs_per_actor']} envs, blocks of "
         f"{costs['block_transitions']} transitions, {costs['block_bytes'] / 2**20:.1f} MiB)"), "",
        _row("cost", "ms per transition"), _row("-", "-"),
        *[_row(name.replace("_", " "), f"{ms:.4f}") for name, ms in costs["per_transition_ms"].items()],
        "", (f"One actor on one core: **{costs['actor_transitions_per_second']:,.0f} transitions/s** (the weights "
             f"counted as if fetched for every block: {costs['weight_bytes'] / 2**20:.1f} MiB each time)."), "",
        "### Actor hosts one learner can feed (an actor a core)", "",
        _row("learner", "transitions/s", *[f"{cores}-core hosts" for cores in HOST_CORES]),
        _row("-", "-", *["-"] * len(HOST_CORES)),
    ]
    learners = [(f"this CPU, {name.replace('_', ' ')}", rate)
                for name, rate in costs["learner_transitions_per_second"].items()]
    learners.append(("one H200, batch 128 (measured once, 2026-11-26)", GPU_LEARNER_TRANSITIONS_PER_SECOND))
    actor = costs["actor_transitions_per_second"]
    for name, rate in learners:
        lines.append(_row(name, f"{rate:,.0f}", *[f"{rate / (actor * cores):.1f}" for cores in HOST_CORES]))
    return [*lines, ""]


def markdown_report(results: dict) -> str:
    lines = [
        *_header("Benchmarks", results),
        (f"Pong figures are rates over a {results['window_seconds']:.0f}-second window after "
        f"{results['warmup_seconds']:.0f} seconds of warm-up."), "",
    ]
    if "denormals" in results:
        lines += _denormals_section(results["denormals"])
    if "probe" in results:
        lines += _probe_section(results["probe"], through_window="pong" in results)
    if "pong" in results:
        lines += _pong_section(results["pong"])
    if "cartpole" in results:
        lines += _cartpole_section(results["cartpole"])
    if "modes" in results:
        lines += _modes_section(results["modes"])
    if "dqn" in results:
        lines += _dqn_section(results["dqn"])
    if "ppo" in results:
        lines += _ppo_section(results["ppo"])
    if "multiagent" in results:
        lines += _multiagent_section(results["multiagent"])
    if "solve" in results:
        lines += _solve_section(results["solve"])
    return "\n".join(lines)


def plot_cartpole(cartpole: dict, path: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    figure, axes = plt.subplots(figsize=(7, 4))
    for name, style, color in (("ours", "-", "tab:blue"), ("sb3", "--", "tab:orange")):
        for index, run in enumerate(cartpole.get(name, [])):
            points = [(t, reward) for t, _, reward in run["curve"] if reward is not None]
            label = ("this trainer" if name == "ours" else "SB3 A2C") if index == 0 else None
            axes.plot([t for t, _ in points], [r for _, r in points], style, color=color, label=label)
    axes.axhline(475, color="grey", linewidth=0.8)
    axes.set_xlabel("wall seconds from launch")
    axes.set_ylabel("mean reward of the last 100 episodes")
    axes.set_title("CartPole-v1, one line per seed")
    axes.legend()
    figure.tight_layout()
    figure.savefig(path, dpi=100)
    plt.close(figure)
