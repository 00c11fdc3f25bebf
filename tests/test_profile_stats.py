from __future__ import annotations

import math

import pytest

from tfdoctor.profile.runner import CpuTimes, foreign_cpu_share, parse_cpu_line, read_cpu_times, steal_share
from tfdoctor.profile.stats import (
    FASTER,
    NO_EFFECT,
    PROCESS_SIGMA,
    SIGMA_FLOOR,
    SLOWER,
    UNDECIDED,
    nested_ratio_interval,
    paired_ratio_interval,
    quantile,
    ratio_interval,
    t_quantile,
)


@pytest.mark.parametrize(("p", "df", "expected"), [
    (0.975, 1, 12.7062), (0.975, 2, 4.3027), (0.975, 10, 2.2281), (0.995, 4, 4.6041), (0.9, 30, 1.3104),
])
def test_t_quantile_matches_tables(p, df, expected):
    assert t_quantile(p, df) == pytest.approx(expected, abs=2e-4)
    assert t_quantile(1 - p, df) == pytest.approx(-expected, abs=2e-4)


def test_paired_interval_decides_a_clear_slowdown():
    a = [0.010, 0.011, 0.0105]
    b = [0.019, 0.021, 0.020]
    interval = paired_ratio_interval(a, b, 0.05 / 6)
    assert interval.ratio == pytest.approx(math.exp(sum(math.log(y / x) for x, y in zip(a, b, strict=True)) / 3))
    assert interval.low > 1.5
    assert interval.verdict() == SLOWER
    assert paired_ratio_interval(b, a, 0.05 / 6).verdict() == FASTER


def test_paired_interval_noise_is_undecided():
    interval = paired_ratio_interval([0.010, 0.020, 0.010], [0.020, 0.010, 0.011], 0.05)
    assert interval.low < 1 < interval.high
    assert interval.verdict() == UNDECIDED


def test_identical_runs_are_no_effect_and_the_floor_keeps_the_interval_honest():
    values = [0.010, 0.010, 0.010, 0.010, 0.010, 0.010]
    interval = paired_ratio_interval(values, values, 0.05)
    # sd is 0; the floor gives half-width t(0.975, 5) * 0.01 / sqrt(6)
    half = t_quantile(0.975, 5) * SIGMA_FLOOR / math.sqrt(6)
    assert interval.high == pytest.approx(math.exp(half))
    assert interval.verdict() == NO_EFFECT


def test_unpaired_interval():
    interval = ratio_interval([0.010, 0.0102, 0.0098], [0.030, 0.031, 0.029], 0.05)
    assert interval.ratio == pytest.approx(3.0, rel=0.02)
    assert interval.verdict() == SLOWER
    with pytest.raises(ValueError):
        ratio_interval([0.01], [0.02, 0.03], 0.05)


def test_quantile():
    assert quantile([5, 1, 3, 2, 4], 0.0) == 1
    assert quantile([5, 1, 3, 2, 4], 0.5) == 3
    assert quantile([5, 1, 3, 2, 4], 1.0) == 5
    assert quantile([1, 2], 0.1) == pytest.approx(1.1)
    assert quantile([7.0], 0.1) == 7.0
    assert quantile([], 0.1) is None


def test_cpu_steal_from_proc_stat_lines():
    before = parse_cpu_line(["cpu", "100", "0", "50", "800", "10", "0", "0", "40", "0", "0"])
    after = parse_cpu_line(["cpu", "200", "0", "100", "1600", "20", "0", "0", "80", "5", "0"])
    assert before == CpuTimes(steal=40, busy=1000 - 800 - 10, total=1000)
    assert steal_share(before, after) == pytest.approx(40 / 1000)
    assert parse_cpu_line(["cpu0", "1", "2", "3"]) is None
    assert parse_cpu_line(["cpu", "1", "2", "x", "4"]) is None
    assert parse_cpu_line(["cpu", "1", "2", "3"]) is None  # no idle column
    assert parse_cpu_line(["cpu", "5", "0", "5", "90"]) == CpuTimes(steal=0, busy=10, total=100)  # an old kernel
    assert steal_share(None, after) is None


def test_one_read_of_proc_stat_gives_steal_and_busy_time(tmp_path):
    stat = tmp_path / "stat"
    stat.write_text("cpu  100 0 50 800 10 0 0 40 7 0\ncpu0 50 0 25 400 5 0 0 20 7 0\nintr 1 2 3\n")
    before = read_cpu_times(str(stat))
    assert before == CpuTimes(steal=40, busy=190, total=1000)  # guest (7) is inside user already
    stat.write_text("cpu  300 0 100 1500 20 0 0 80 9 0\n")
    after = read_cpu_times(str(stat))
    assert steal_share(before, after) == pytest.approx(40 / 1000)
    # 480 - 190 = 290 busy jiffies of the 1000 that passed, none of them ours
    assert foreign_cpu_share(before, after, own_cpu_seconds=0.0) == pytest.approx(0.29)
    assert read_cpu_times(str(tmp_path / "absent")) is None
    stat.write_bytes(b"cpu  1 2 3 \xff\n")
    assert read_cpu_times(str(stat)) is None


def test_nested_interval_one_round_of_chunk_pairs():
    d = [0.40, 0.55, 0.30, 0.62, 0.45, 0.50, 0.38, 0.58]
    interval = nested_ratio_interval([d], 0.01)
    mean = sum(d) / len(d)
    var = sum((x - mean) ** 2 for x in d) / (len(d) - 1)
    half = t_quantile(0.995, len(d) - 1) * math.sqrt(PROCESS_SIGMA ** 2 + var / len(d))
    assert interval.ratio == pytest.approx(math.exp(mean))
    assert (interval.low, interval.high) == (pytest.approx(math.exp(mean - half)), pytest.approx(math.exp(mean + half)))
    assert interval.df == len(d) - 1 and interval.n_a == interval.n_b == len(d)
    assert interval.verdict() == SLOWER


def test_nested_interval_identical_chunks_keep_the_process_floor():
    interval = nested_ratio_interval([[0.0] * 8, [0.0] * 8], 0.01)
    # within-round variance floored at SIGMA_FLOOR^2, the processes' at PROCESS_SIGMA^2, pooled df 14
    half = t_quantile(0.995, 14) * math.sqrt(2 * (PROCESS_SIGMA ** 2 + SIGMA_FLOOR ** 2 / 8)) / 2
    assert interval.high == pytest.approx(math.exp(half))
    assert interval.verdict() == NO_EFFECT
    assert nested_ratio_interval([[0.0] * 8], 0.01).verdict() == UNDECIDED  # one process pair cannot say "none"


def test_rounds_that_disagree_widen_the_interval():
    steady = [[0.3, 0.32, 0.28, 0.31]] * 3
    drifting = [[x - 0.25 for x in steady[0]], [x + 0.25 for x in steady[0]], steady[0]]
    a, b = nested_ratio_interval(steady, 0.01), nested_ratio_interval(drifting, 0.01)
    assert a.ratio == pytest.approx(b.ratio)
    assert a.verdict() == SLOWER and b.verdict() == UNDECIDED
    assert (b.high - b.low) > 5 * (a.high - a.low)


def test_nested_interval_needs_two_pairs_and_ignores_empty_rounds():
    with pytest.raises(ValueError):
        nested_ratio_interval([[0.1], []], 0.05)
    one_each = nested_ratio_interval([[0.1], [], [0.12], [0.11]], 0.05)
    assert one_each.n_a == 3 and one_each.df == 2
