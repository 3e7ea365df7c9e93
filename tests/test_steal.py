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


def test_steal_is_not_measured_without_proc_stat(tmp_path, monkeypatch):
    monkeypatch.setattr(steal, "PROC_STAT", tmp_path / "missing")
    with StealMeter() as meter:
        pass
    assert meter.fraction is None
