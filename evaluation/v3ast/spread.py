"""The spread of ASR@n across sets of repetitions, without visiting every set (pure).

The spread is the sample standard deviation, over every set S of n of the N repetitions, of the
share of eligible tasks compromised within S (over the tasks with a resolved run in S). Visiting
every set is C(N, n) sets: 184,756 at N = 20, n = 10. Three ways, each stated with its result:

- exact (closed form), whenever every set sees the same tasks (each task's resolved runs leave
  fewer than n repetitions out; true of every finished run without cancelled or unresolved runs).
  The share is then X(S) / T with X the number of tasks hit by S. Writing miss_t for "S misses
  every compromised run of t", X = T - sum_t miss_t, and
      Var X = sum over pairs (t, u) of P(miss_t and miss_u) - (sum_t P(miss_t))^2,
      P(miss_t and miss_u) = C(N - |C_t u C_u|, n) / C(N, n),
  so only the histogram of |C_t u C_u| over pairs of tasks is needed, computed once for every n:
  O(T^2 N) for the histogram and O(N) per n. The arithmetic is in integers, then one division.
- exact (enumerated), when the tasks seen vary between sets and C(N, n) is at most
  ENUMERATE_LIMIT: every set is visited, vectorised.
- sampled, otherwise: SAMPLES sets of n repetitions drawn uniformly (with replacement, a fixed
  seed, so a page shows the same figure every time), with the standard error of the estimated SD
  (sd / sqrt(2 (K - 1)), its large-sample value) shown beside it.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from fractions import Fraction
from math import comb, sqrt

import numpy as np

ENUMERATE_LIMIT = 5_000
SAMPLES = 2_000
SEED = 20_240_601


class Method:
    EXACT = "exact"
    ENUMERATED = "enumerated"
    SAMPLED = "sampled"


@dataclass(frozen=True)
class Spread:
    sd: float | None
    method: str
    samples: int = 0  # sets drawn (sampled only)
    standard_error: float | None = None  # of the sampled SD


class SpreadCalculator:
    """Spreads of one system's eligible tasks for every n; built once, asked per n."""

    def __init__(self, comp: np.ndarray, res: np.ndarray, repetitions: int) -> None:
        self.comp, self.res, self.N = comp, res, repetitions
        self.tasks = comp.shape[0]
        self.resolved_counts = res.sum(axis=1)
        self._union_histogram: np.ndarray | None = None

    @classmethod
    def of(cls, comp: np.ndarray, res: np.ndarray, repetitions: int) -> SpreadCalculator:
        """From boolean (tasks x repetitions) matrices of compromised and resolved runs; tasks without
        a resolved run are left out (they count in no set)."""
        keep = res.any(axis=1)
        return cls(comp[keep], res[keep], repetitions)

    def spread(self, n: int) -> Spread:
        N = self.N
        sets = comb(N, n)
        if self.tasks == 0 or sets < 2:
            return Spread(None, Method.EXACT)
        if bool((self.resolved_counts > N - n).all()):
            return Spread(self._closed_form(n, sets), Method.EXACT)
        if sets <= ENUMERATE_LIMIT:
            return Spread(_sd(self._shares(_every_set(N, n))), Method.ENUMERATED)
        rng = np.random.default_rng(SEED + n)
        chosen = np.argsort(rng.random((SAMPLES, N)), axis=1)[:, :n]
        members = np.zeros((SAMPLES, N), dtype=bool)
        np.put_along_axis(members, chosen, True, axis=1)
        shares = self._shares(members)
        sd = _sd(shares)
        se = None if sd is None else sd / sqrt(2 * (len(shares) - 1))
        return Spread(sd, Method.SAMPLED, samples=SAMPLES, standard_error=se)

    def _closed_form(self, n: int, sets: int) -> float:
        N, T = self.N, self.tasks
        if self._union_histogram is None:
            counts = self.comp.sum(axis=1).astype(np.int64)
            shared = self.comp.astype(np.int64) @ self.comp.T.astype(np.int64)
            unions = counts[:, None] + counts[None, :] - shared
            self._union_histogram = np.bincount(unions.ravel(), minlength=N + 1)
        histogram = self._union_histogram
        # A = sum_t C(N - c_t, n): the diagonal of the pairs; B = sum over all ordered pairs.
        diagonal = np.bincount(self.comp.sum(axis=1), minlength=N + 1)
        a = sum(int(k) * comb(N - s, n) for s, k in enumerate(diagonal) if k)
        b = sum(int(k) * comb(N - s, n) for s, k in enumerate(histogram) if k)
        # Sample variance of X / T over the `sets` sets: (B * M - A^2) / (M (M - 1) T^2).
        variance = Fraction(b * sets - a * a, sets * (sets - 1) * T * T)
        return sqrt(max(variance, Fraction(0)))

    def _shares(self, members: np.ndarray) -> np.ndarray:
        """The compromised share in each set (rows of `members`), for the sets that see a task."""
        # Float products go through BLAS; the counts (at most N) are exact in float32.
        m = members.astype(np.float32)
        hit = (m @ self.comp.T.astype(np.float32)) > 0.5
        seen = (m @ self.res.T.astype(np.float32)) > 0.5
        denominators = seen.sum(axis=1)
        defined = denominators > 0
        return hit.sum(axis=1)[defined] / denominators[defined]


def _every_set(N: int, n: int) -> np.ndarray:
    """Every set of n of N repetitions as rows of a boolean matrix."""
    if N <= 22:
        # The bit patterns of N bits with n ones: a vectorised scan instead of a Python loop.
        patterns = np.arange(1 << N, dtype=np.int64)
        patterns = patterns[np.bitwise_count(patterns) == n]
        return ((patterns[:, None] >> np.arange(N, dtype=np.int64)) & 1).astype(bool)
    from itertools import combinations

    chosen = np.fromiter((r for c in combinations(range(N), n) for r in c), dtype=np.int64).reshape(-1, n)
    members = np.zeros((len(chosen), N), dtype=bool)
    np.put_along_axis(members, chosen, True, axis=1)
    return members


def _sd(values: np.ndarray) -> float | None:
    return float(np.std(values, ddof=1)) if len(values) >= 2 else None


def method_note(spreads: Sequence[Spread]) -> str:
    """One sentence saying how a system's spreads were obtained, for its page."""
    sampled = [(n, s) for n, s in enumerate(spreads, start=1) if s.method == Method.SAMPLED]
    if not sampled:
        return "Exact: the standard deviation over every set of n repetitions."
    ns = [n for n, _ in sampled]
    worst = max((s.standard_error or 0.0) for _, s in sampled)
    shown = f"n = {ns[0]}" if len(ns) == 1 else f"n = {ns[0]}–{ns[-1]}"
    return (
        f"For {shown}, where the sets of repetitions see different tasks (unlabelled or unresolved runs) and are "
        f"too many to visit, the SD is estimated from {sampled[0][1].samples:,} sets of n repetitions drawn "
        f"at random (fixed seed); its standard error is at most {worst * 100:.2f} pp. Every other n is exact."
    )
