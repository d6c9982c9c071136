"""The planner's lower bound: the linear-programming relaxation of the instance choice.

Any plan buys ``x_t`` instances of each type ``t`` (price ``p_t``, capacity ``a_t`` in
vCPUs, memory and GPUs) with enough room in every dimension for the jobs' total demand
``D``: ``sum_t a_t x_t >= D``. Dropping the integrality of ``x`` (and the fact that a job
cannot be split across instances) leaves the covering LP ``min p.x  s.t.  A x >= D,
x >= 0``, whose optimum is therefore a lower bound on every plan's cost. Its dual is
``max D.y  s.t.  a_t.y <= p_t for every t, y >= 0``: ``y`` prices one vCPU, one byte and
one GPU so that no type is worth more than it costs. By weak duality *any* dual-feasible
``y`` bounds every plan, since ``p.x >= (A^T y).x = y.(A x) >= y.D``; the bound is valid
however ``y`` was found, and :func:`dual_prices` makes its ``y`` feasible exactly (it
scales the vertex down by the worst ratio ``a_t.y / p_t``), so rounding in solving the
small systems can only weaken it, never make it wrong.

With at most three dimensions the dual optimum is a vertex where as many type
constraints as there are dimensions with demand are tight; :func:`dual_prices` tries
every such subset of types (a few thousand 3 x 3 systems for a catalogue of ~40 types,
a few hundred 2 x 2 ones when no job needs a GPU) and keeps the best feasible one: the
exact LP optimum, in closed form (Cramer's rule), with no solver.

This bound couples cores and memory: jobs that need 2 vCPUs and 4 GiB each cannot all
go to the cheapest-per-vCPU family *and* the cheapest-per-GiB family at once, which the
single-dimension bound (demand of one dimension times its cheapest unit price) assumes.
It is never below the single-dimension bound, whose ``y`` (one unit price, the rest 0)
is one of the dual's feasible points. Hinted jobs add more: a type some jobs must run on
needs at least ``ceil(hinted demand / capacity)`` instances of itself, counted exactly
before the LP covers the rest (see :func:`lp_bound`).
"""

from __future__ import annotations

import itertools
from collections.abc import Sequence

__all__ = ["dual_prices", "lp_bound"]

Vector = tuple[float, float, float]


def _solve(rows: list[list[float]], rhs: list[float]) -> list[float] | None:
    # Cramer's rule for 1, 2 or 3 unknowns; None when the system is singular
    k = len(rows)
    if k == 1:
        return [rhs[0] / rows[0][0]] if rows[0][0] else None
    if k == 2:
        (a, b), (c, d) = rows
        det = a * d - b * c
        if not det:
            return None
        return [(rhs[0] * d - b * rhs[1]) / det, (a * rhs[1] - c * rhs[0]) / det]
    (a, b, c), (d, e, f), (g, h, i) = rows
    det = a * (e * i - f * h) - b * (d * i - f * g) + c * (d * h - e * g)
    if not det:
        return None
    r0, r1, r2 = rhs
    x = r0 * (e * i - f * h) - b * (r1 * i - f * r2) + c * (r1 * h - e * r2)
    y = a * (r1 * i - f * r2) - r0 * (d * i - f * g) + c * (d * r2 - r1 * g)
    z = a * (e * r2 - r1 * h) - b * (d * r2 - r1 * g) + r0 * (d * h - e * g)
    return [x / det, y / det, z / det]


def dual_prices(
    capacities: Sequence[Vector], prices: Sequence[float], demand: Vector
) -> tuple[float, Vector]:
    """The covering LP's optimum and a dual-feasible price per unit of each dimension.

    ``capacities`` and ``demand`` are in any units (the same for both); returns
    ``(D.y, y)`` with ``a_t.y <= p_t`` for every type. Dimensions without demand get 0.
    """
    dims = [d for d in range(3) if demand[d] > 0]
    if not dims or not capacities:
        return 0.0, (0.0, 0.0, 0.0)
    # units close to 1 keep the small systems well conditioned
    scale = [max((c[d] for c in capacities), default=0.0) or 1.0 for d in range(3)]
    caps = [[c[d] / scale[d] for d in range(3)] for c in capacities]
    need = [demand[d] / scale[d] for d in range(3)]
    best_value, best = 0.0, [0.0, 0.0, 0.0]
    for size in range(1, len(dims) + 1):
        for subset in itertools.combinations(dims, size):
            useful = [n for n, c in enumerate(caps) if any(c[d] > 0 for d in subset)]
            for chosen in itertools.combinations(useful, size):
                solution = _solve(
                    [[caps[n][d] for d in subset] for n in chosen], [prices[n] for n in chosen]
                )
                if solution is None or min(solution) < 0:
                    continue
                y = [0.0, 0.0, 0.0]
                for d, value in zip(subset, solution, strict=True):
                    y[d] = value
                value = sum(need[d] * y[d] for d in dims)
                if value <= best_value:
                    continue
                worst = max(
                    sum(c[d] * y[d] for d in dims) / p
                    if p > 0
                    else (float("inf") if any(c[d] * y[d] > 0 for d in dims) else 0.0)
                    for c, p in zip(caps, prices, strict=True)
                )
                if worst <= 1 + 1e-9:
                    best_value, best = value, y
    # exact feasibility: shrink y by the worst ratio, so rounding cannot overstate it
    worst = max(
        (
            sum(c[d] * best[d] for d in range(3)) / p
            for c, p in zip(caps, prices, strict=True)
            if p > 0
        ),
        default=0.0,
    )
    if worst > 1:
        best = [v / worst for v in best]
    prices_per_unit = (best[0] / scale[0], best[1] / scale[1], best[2] / scale[2])
    total = sum(demand[d] * prices_per_unit[d] for d in range(3))
    return float(total), prices_per_unit


def lp_bound(
    capacities: Sequence[Vector],
    prices: Sequence[float],
    demand: Vector,
    hinted: Sequence[Vector],
) -> tuple[float, list[str]]:
    """The LP bound with the instances hinted jobs force counted first, and the names of
    what it charges for (the dimensions with a positive dual price, ``hints``).

    ``hinted[t]`` is the total demand of the jobs whose hint names type ``t``. Every
    plan has at least ``L_t = max_d ceil(hinted[t][d] / a_t[d])`` instances of ``t``;
    writing ``x_t = L_t + x'_t`` leaves the LP over ``x' >= 0`` covering what those
    instances do not: ``max(0, D - sum_t a_t L_t)``.
    """
    forced = [
        max((-(-int(h[d]) // int(c[d])) for d in range(3) if h[d] > 0 and c[d] > 0), default=0)
        for c, h in zip(capacities, hinted, strict=True)
    ]
    cost = sum(p * n for p, n in zip(prices, forced, strict=True))
    rest = tuple(
        max(0.0, demand[d] - sum(c[d] * n for c, n in zip(capacities, forced, strict=True)))
        for d in range(3)
    )
    value, y = dual_prices(capacities, prices, (rest[0], rest[1], rest[2]))
    names = [name for name, price in zip(("cpus", "memory", "gpus"), y, strict=True) if price > 0]
    if any(forced):
        names.append("hints")
    return cost + value, names
