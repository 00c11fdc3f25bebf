"""The statistics of an A/B comparison of step times (pure; no numpy, no scipy).

A comparison runs in rounds (tfdoctor/profile/compare.py): each round starts a fresh A process and a
fresh B process and times them in alternating chunks of a few steps, A B B A A B …, so that whatever
else the machine does at a moment falls on both arms. A chunk gives one value per arm (the 10th
percentile of its steps: other processes only ever add time to a step), and a chunk pair j of round r
gives d_rj = log(b_rj / a_rj). The estimate is the mean of the rounds' means m_r, and

    var = (1/R^2) * sum_r (tau^2 + s_w^2 / K_r),    interval = exp(mean ± t(1 - alpha/2, N - R) * sqrt(var))

(`nested_ratio_interval`): s_w^2 is the pooled within-round variance of d (at least SIGMA_FLOOR^2), K_r a
round's pairs, N all pairs, R the rounds, and tau^2 the variance that comes with the processes
themselves (thread placement, memory layout, the load of the minute): at least PROCESS_SIGMA^2, and from
two rounds on the rounds' own excess spread (var(m_r) - mean(s_w^2 / K_r)) when that is larger. So one
round can decide a large effect, and rounds that disagree widen the interval.

The caller splits its error rate over the looks it takes (Bonferroni), and a look decides:
  slower    - the whole interval is above 1 (B takes longer per step than A)
  faster    - the whole interval is below 1
  no-effect - the whole interval lies within 1 ± EQUIVALENCE (too small to matter, and measured so)
and is undecided otherwise. `paired_ratio_interval` (one value per process pair) and `ratio_interval`
(unpaired) are the per-process forms, for callers whose units are whole runs.
"""

from __future__ import annotations

import math
import statistics
from collections.abc import Sequence
from dataclasses import dataclass

SIGMA_FLOOR = 0.01  # 1 % chunk-to-chunk (or process-to-process) noise on the log scale, at least
# Between two fresh processes of the same environment, step times differ by about 1 % on the log scale:
# A/A comparisons in CPU time on a busy 2-CPU VM gave round means with an sd of 1.2 % (-3.2 % to +1.0 %),
# 0.9 % once the chunks' own noise is taken out (benchmarks/results/profile_compare_budget-2026-11-25.log).
# The rounds' own spread takes over when larger.
PROCESS_SIGMA = 0.01
EQUIVALENCE = 0.03  # differences within ±3 % count as "no measurable effect"
SLOWER, FASTER, NO_EFFECT, UNDECIDED = "slower", "faster", "no-effect", "undecided"


@dataclass(frozen=True)
class RatioInterval:
    """A confidence interval for the ratio of two step times (B / A)."""

    ratio: float  # B / A, > 1 means B is slower
    low: float
    high: float
    confidence: float  # of this one look, e.g. 0.99 after the Bonferroni split
    n_a: int
    n_b: int
    df: float | None = None  # degrees of freedom of the t quantile used

    def verdict(self, equivalence: float = EQUIVALENCE) -> str:
        if self.low > 1.0:
            return SLOWER
        if self.high < 1.0:
            return FASTER
        if self.low >= 1.0 / (1.0 + equivalence) and self.high <= 1.0 + equivalence:
            return NO_EFFECT
        return UNDECIDED

    def to_json(self) -> dict[str, float | int]:
        return {"ratio": self.ratio, "low": self.low, "high": self.high, "confidence": self.confidence,
                "n_a": self.n_a, "n_b": self.n_b, "df": self.df}


def ratio_interval(a: Sequence[float], b: Sequence[float], alpha: float) -> RatioInterval:
    """Interval for step(B) / step(A) from per-process values (each list ≥ 2)."""
    if len(a) < 2 or len(b) < 2:
        raise ValueError("each arm needs at least two processes")
    if min(*a, *b) <= 0:
        raise ValueError("step times must be positive")
    la, lb = [math.log(v) for v in a], [math.log(v) for v in b]
    df = len(la) + len(lb) - 2
    pooled = (statistics.variance(la) * (len(la) - 1) + statistics.variance(lb) * (len(lb) - 1)) / df
    sigma = max(math.sqrt(pooled), SIGMA_FLOOR)
    se = sigma * math.sqrt(1 / len(la) + 1 / len(lb))
    diff = statistics.fmean(lb) - statistics.fmean(la)
    half = t_quantile(1 - alpha / 2, df) * se
    return RatioInterval(math.exp(diff), math.exp(diff - half), math.exp(diff + half), 1 - alpha,
                         len(la), len(lb))


def paired_ratio_interval(a: Sequence[float], b: Sequence[float], alpha: float, prior_sd: float = 0.0,
                          prior_df: int = 0, floor: float = SIGMA_FLOOR) -> RatioInterval:
    """Interval for step(B) / step(A) from rounds that each measured A and B side by side.

    d_i = log(b_i / a_i); interval exp(mean(d) ± t(1 - alpha/2, df) * max(s, floor) / sqrt(n)), where s is
    the standard deviation of d pooled with `prior_sd` (of a paired difference, known from other runs of
    the same machine) on `prior_df` degrees of freedom, and df = n - 1 + prior_df.
    """
    if len(a) != len(b) or len(a) < 2:
        raise ValueError("paired values: two equally long lists of at least two rounds")
    if min(*a, *b) <= 0:
        raise ValueError("step times must be positive")
    diffs = [math.log(y / x) for x, y in zip(a, b, strict=True)]
    mean = statistics.fmean(diffs)
    df = len(diffs) - 1 + prior_df
    variance = (sum((d - mean) ** 2 for d in diffs) + prior_sd**2 * prior_df) / df
    sigma = max(math.sqrt(variance), floor)
    half = t_quantile(1 - alpha / 2, df) * sigma / math.sqrt(len(diffs))
    return RatioInterval(math.exp(mean), math.exp(mean - half), math.exp(mean + half), 1 - alpha,
                         len(a), len(b), df)


def nested_ratio_interval(rounds: Sequence[Sequence[float]], alpha: float,
                          process_sigma: float = PROCESS_SIGMA) -> RatioInterval:
    """Interval for step(B) / step(A) from log ratios d_rj of chunk pairs, grouped by round (module doc).

    Needs at least two pairs in all (rounds with no pair are ignored)."""
    groups = [list(r) for r in rounds if r]
    pairs = sum(len(g) for g in groups)
    if pairs < 2:
        raise ValueError("nested values: at least two chunk pairs")
    means = [statistics.fmean(g) for g in groups]
    df = pairs - len(groups)
    if df >= 1:
        within = sum((x - m) ** 2 for g, m in zip(groups, means, strict=True) for x in g) / df
    else:  # one pair per round: the rounds' spread is all there is
        within, df = statistics.variance(means), len(groups) - 1
    within = max(within, SIGMA_FLOOR ** 2)
    tau2 = process_sigma ** 2
    if len(groups) >= 2:
        excess = statistics.variance(means) - statistics.fmean(within / len(g) for g in groups)
        tau2 = max(tau2, excess)
    var = sum(tau2 + within / len(g) for g in groups) / len(groups) ** 2
    mean = statistics.fmean(means)
    half = t_quantile(1 - alpha / 2, df) * math.sqrt(var)
    return RatioInterval(math.exp(mean), math.exp(mean - half), math.exp(mean + half), 1 - alpha,
                         pairs, pairs, float(df))


# -- Student's t without scipy -------------------------------------------------------------------


def _betacf(a: float, b: float, x: float) -> float:
    """Continued fraction of the regularized incomplete beta function (modified Lentz)."""
    tiny, eps = 1e-300, 3e-16
    qab, qap, qam = a + b, a + 1, a - 1
    c, d = 1.0, 1.0 - qab * x / qap
    d = 1.0 / (d if abs(d) > tiny else tiny)
    h = d
    for m in range(1, 400):
        m2 = 2 * m
        aa = m * (b - m) * x / ((qam + m2) * (a + m2))
        d = 1.0 + aa * d
        d = 1.0 / (d if abs(d) > tiny else tiny)
        c = 1.0 + aa / c
        c = c if abs(c) > tiny else tiny
        h *= d * c
        aa = -(a + m) * (qab + m) * x / ((a + m2) * (qap + m2))
        d = 1.0 + aa * d
        d = 1.0 / (d if abs(d) > tiny else tiny)
        c = 1.0 + aa / c
        c = c if abs(c) > tiny else tiny
        delta = d * c
        h *= delta
        if abs(delta - 1.0) < eps:
            break
    return h


def _betainc(a: float, b: float, x: float) -> float:
    if x <= 0:
        return 0.0
    if x >= 1:
        return 1.0
    front = math.exp(math.lgamma(a + b) - math.lgamma(a) - math.lgamma(b) + a * math.log(x) + b * math.log1p(-x))
    if x < (a + 1) / (a + b + 2):
        return front * _betacf(a, b, x) / a
    return 1.0 - front * _betacf(b, a, 1 - x) / b


def quantile(values: Sequence[float], q: float) -> float | None:
    """The q-quantile by linear interpolation between order statistics; None for no values.
    (statistics.quantiles cuts into n equal parts and needs two values before Python 3.13: not a q.)"""
    if not values:
        return None
    ordered = sorted(values)
    position = q * (len(ordered) - 1)
    low = int(position)
    high = min(low + 1, len(ordered) - 1)
    return ordered[low] + (ordered[high] - ordered[low]) * (position - low)


def t_cdf(t: float, df: float) -> float:
    tail = 0.5 * _betainc(df / 2, 0.5, df / (df + t * t))
    return 1 - tail if t >= 0 else tail


def t_quantile(p: float, df: float) -> float:
    """The p-quantile of Student's t with df degrees of freedom (bisection on the CDF)."""
    if not 0 < p < 1:
        raise ValueError("p must be in (0, 1)")
    if p < 0.5:
        return -t_quantile(1 - p, df)
    low, high = 0.0, 1.0
    while t_cdf(high, df) < p:
        high *= 2
    for _ in range(200):
        mid = (low + high) / 2
        if t_cdf(mid, df) < p:
            low = mid
        else:
            high = mid
        if high - low < 1e-10 * max(1.0, high):
            break
    return (low + high) / 2
