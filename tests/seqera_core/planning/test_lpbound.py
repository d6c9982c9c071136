"""The LP lower bound: hand-checked values, validity against known optima (full
instances cut into jobs) and against plans of random inputs, and the lookahead's
distance from those optima."""

from __future__ import annotations

import random

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from seqera_core.planning import catalogue as catalogues
from seqera_core.planning._lpbound import dual_prices
from seqera_core.planning._planner import Job, lower_bound, schedule
from seqera_core.planning.catalogue import Catalogue, InstanceType
from seqera_core.units import GIB

COMPUTE = InstanceType("compute", vcpus=8, memory=8 * GIB, price=0.30)
MEMORY = InstanceType("memory", vcpus=2, memory=32 * GIB, price=0.40)


def test_cores_and_memory_together_beat_either_alone() -> None:
    catalogue = Catalogue((COMPUTE, MEMORY))
    jobs = [Job(f"j{n}", 2, 8 * GIB) for n in range(4)]
    bound = lower_bound(catalogue, jobs)
    # alone: 8 cpus at 0.0375 = 0.30; 32 GiB at 0.0125 = 0.40
    assert bound.per_dimension == {"cpus": pytest.approx(0.30), "memory": pytest.approx(0.40)}
    # together: 8c + 2m >= 8 and 8c + 32m >= 32 meet at c = m = 0.8: 0.24 + 0.32
    assert bound.hourly == pytest.approx(0.56)
    assert bound.dimension == "cpus+memory"
    assert schedule(catalogue, jobs).hourly_cost >= bound.hourly


def test_a_hinted_type_is_counted_whole() -> None:
    catalogue = Catalogue((COMPUTE, MEMORY))
    # alone the job is worth 1/8 of a compute box; its hint makes it a whole memory box
    bound = lower_bound(catalogue, [Job("a", 1, GIB, 0, "memory")])
    assert bound.hourly == pytest.approx(0.40) and bound.dimension == "hints"


def test_the_dual_prices_no_type_above_its_price() -> None:
    types = catalogues.default().types
    capacities = [(t.vcpus, t.memory / GIB, t.gpus) for t in types]
    value, y = dual_prices(capacities, [t.price for t in types], (1000.0, 5000.0, 3.0))
    for (c, m, g), t in zip(capacities, types, strict=True):
        assert c * y[0] + m * y[1] + g * y[2] <= t.price * (1 + 1e-12)
    assert value == pytest.approx(1000 * y[0] + 5000 * y[1] + 3 * y[2])


def cut(r: random.Random, types: list[InstanceType], count: int) -> tuple[list[Job], float]:
    """Jobs that fill whole instances exactly (cores in halves, memory in quarter GiB),
    shuffled; the price of those instances is what an optimal plan costs at most."""
    jobs: list[Job] = []
    cost = 0.0
    while len(jobs) < count:
        t = r.choice(types)
        halves, quarters = int(t.vcpus * 2), t.memory // (GIB // 4)
        pieces = min(r.randint(1, 8), halves)
        cores = sorted(r.sample(range(1, halves), pieces - 1))
        sizes = sorted(r.sample(range(1, quarters), pieces - 1))
        for c0, c1, m0, m1 in zip(
            [0, *cores], [*cores, halves], [0, *sizes], [*sizes, quarters], strict=True
        ):
            jobs.append(Job(f"j{len(jobs)}", (c1 - c0) / 2, (m1 - m0) * (GIB // 4)))
        cost += t.price
    r.shuffle(jobs)
    return jobs, cost


@pytest.mark.parametrize("seed", [1, 2, 3])
def test_the_bound_is_below_a_known_optimum_and_the_lookahead_within_one_percent(
    seed: int,
) -> None:
    catalogue = catalogues.default()
    types = [t for t in catalogue.types if not t.gpus]
    jobs, optimum = cut(random.Random(seed), types, 1000)
    bound = lower_bound(catalogue, jobs)
    assert bound.hourly <= optimum
    # the joint bound is close to the optimum; cores alone were 17 % below it
    assert bound.hourly >= 0.97 * optimum
    assert max(bound.per_dimension.values()) < 0.9 * optimum
    published = schedule(catalogue, jobs).hourly_cost
    better = schedule(catalogue, jobs, lookahead=True).hourly_cost
    assert bound.hourly <= better <= 1.01 * optimum
    assert bound.hourly <= published


@st.composite
def problems(draw: st.DrawFn) -> tuple[Catalogue, list[Job]]:
    types = tuple(
        InstanceType(
            f"t{n}",
            vcpus=draw(st.sampled_from([1, 2, 4, 8, 16])),
            memory=draw(st.integers(1, 64)) * GIB,
            gpus=draw(st.sampled_from([0, 0, 0, 1, 4])),
            price=draw(st.floats(0.01, 5.0)),
        )
        for n in range(draw(st.integers(1, 6)))
    )
    jobs = []
    for n in range(draw(st.integers(0, 40))):
        home = draw(st.sampled_from(types))
        cpus = draw(st.sampled_from([c for c in (0.1, 0.5, 1, 2, 3, 8) if c <= home.vcpus]))
        memory = draw(st.integers(1, home.memory))
        gpus = draw(st.integers(0, home.gpus))
        hint = home.name if draw(st.integers(0, 5)) == 0 else None
        jobs.append(Job(f"j{n}", cpus, memory, gpus, hint))
    return Catalogue(types), jobs


@settings(max_examples=150, deadline=None)
@given(problems())
def test_no_plan_costs_less_than_the_bound(problem: tuple[Catalogue, list[Job]]) -> None:
    catalogue, jobs = problem
    bound = lower_bound(catalogue, jobs)
    assert bound.hourly >= max(bound.per_dimension.values(), default=0.0)
    for lookahead in (False, True):
        cost = schedule(catalogue, jobs, lookahead=lookahead).hourly_cost
        assert bound.hourly <= cost * (1 + 1e-9)
