"""The benchmark's CPU-steal reading, from /proc/stat counters written by the test."""
from benchmarks import steal
from benchmarks.steal import StealMeter


def _stat_line(user, system, idle, steal_ticks, guest=0):
    # user nice system idle iowait irq softirq steal guest guest_nice
    return f"cpu  {user} 0 {system} {idle} 0 0 0 {steal_ticks} {guest} 0\ncpu0 1 2 3 4\n"


def test_steal_is_its_share_of_all_cpu_time_over_the_block(tmp_path, monkeypatch):
    stat = tmp_path / "stat"
    monkeypatch.setattr(steal, "PROC_STAT", stat)
    stat.write_text(_stat_line(user=1000, system=100, idle=5000, steal_ticks=50))
    with StealMeter() as meter:
        # 300 user + 50 system + 450 idle + 200 steal ticks; guest time is inside user already
        stat.write_text(_stat_line(user=1300, system=150, idle=5450, steal_ticks=250, guest=100))
    assert meter.fraction == 200 / 1000
    assert meter.busy == (300 + 50) / 1000


def test_busy_counts_iowait_as_idle_and_irq_time_as_busy(tmp_path, monkeypatch):
    stat = tmp_path / "stat"
    monkeypatch.setattr(steal, "PROC_STAT", stat)
    # user nice system idle iowait irq softirq steal
    stat.write_text("cpu  0 0 0 0 0 0 0 0 0 0\n")
    with StealMeter() as meter:
        stat.write_text("cpu  100 20 30 400 150 10 40 250 0 0\n")
    assert meter.busy == (100 + 20 + 30 + 10 + 40) / 1000
    assert meter.fraction == 250 / 1000


def test_busy_before_reads_the_counters_around_its_wait(tmp_path, monkeypatch):
    stat = tmp_path / "stat"
    monkeypatch.setattr(steal, "PROC_STAT", stat)
    stat.write_text(_stat_line(user=0, system=0, idle=0, steal_ticks=0))
    # another job holds one core of two while the benchmark waits
    monkeypatch.setattr(steal.time, "sleep", lambda seconds: stat.write_text(
        _stat_line(user=int(100 * seconds), system=0, idle=int(100 * seconds), steal_ticks=0)))
    assert steal.busy_before(2.0) == 0.5


def test_steal_is_not_measured_without_proc_stat(tmp_path, monkeypatch):
    monkeypatch.setattr(steal, "PROC_STAT", tmp_path / "missing")
    with StealMeter() as meter:
        pass
    assert meter.fraction is None
    assert meter.busy is None


def test_reports_say_how_busy_other_processes_kept_the_cores_before_the_run():
    from benchmarks.atari import atari_report
    from benchmarks.report import solve_report

    machine = {"cpu": "cpu", "cores": 2, "memory_gib": 24, "platform": "linux", "versions": {}}
    solve = {"goal": 18.0, "ours": []}
    shared = solve_report({"command": "x", "machine": machine | {"busy_before": 0.52}, "solve": solve})
    assert "Other processes' share of the cores before the run: 52%." in shared
    assert "share of the cores" not in solve_report({"command": "x", "machine": machine, "solve": solve})

    run = {"game": "Pong", "algo": "a3c", "sticky": False, "seed": 0, "frames": 10**7, "score_2.5M": None,
           "score_5M": None, "score_end": 1.0, "best": 1.0, "best_frames": 10**7, "minutes": 30.0,
           "locked_from_frames": None, "held": True, "curve": []}
    source = {"command": "c", "date": "d", "cpu": "cpu", "cores": 2, "commit": "abc"}
    busy = atari_report([run | {"provenance": source | {"busy_before": 0.5}}])
    assert "commit abc, other processes keeping 50% of the cores busy at launch" in busy
    # under the warning's threshold, and in runs recorded before the reading, nothing is said
    assert "busy at launch" not in atari_report([run | {"provenance": source | {"busy_before": 0.02}}])
    assert "busy at launch" not in atari_report([run | {"provenance": source}])
    # a peer's torch threads, which decide its minutes beside other processes, are in its line
    peer = run | {"provenance": source, "settings": {"life_loss": True, "torch_threads": 1}}
    assert "commit abc, SB3 on 1 torch thread(s)" in atari_report([peer])
    assert "torch thread" not in atari_report([run | {"provenance": source, "settings": {"life_loss": True}}])
