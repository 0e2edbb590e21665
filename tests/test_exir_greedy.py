"""``cadence_memplan.exir.greedy`` against exir's own ``greedy`` (executorch 1.5.x).

Every case is built once and each planner runs on its own deep copy of the specs:
every spec's (mem_id, mem_offset, mem_obj_id) in the result, the bufsizes, every spec's
fields afterwards (``realign``'s side effect) must be exir's; where exir raises, ours
raises an exception of exir's type with exir's message, and leaves the specs as they
were. Hand-written cases (tests/exir_cases.py's ``NAMED_GREEDY_CASES``) name each
feature of exir's algorithm; seeded and hypothesis cases (tests/exir_cases.py) mix them. ``verify_storage_reuse`` is held to exir's
``Verifier.verify_storage_reuse`` on valid and deliberately broken plans.
"""

from __future__ import annotations

import copy
import functools
import random
from collections import Counter
from dataclasses import replace

import pytest

pytest.importorskip(
    "executorch",
    reason='needs torch and executorch: pip install torch==2.13.0 && pip install ".[executorch]"',
)

from cases import HypothesisChooser, RandomChooser
from executorch.exir.memory_planning import MemoryPlanningAlgorithmSuite
from executorch.exir.memory_planning import greedy as exir_greedy
from exir_cases import (
    NAMED_GREEDY_CASES,
    GreedyCase,
    SpecDescription,
    build_specs,
    generate_greedy_case,
    graph_module_with,
    spec,
    without_inverted_lifetimes,
)
from exir_runs import (
    Planned,
    Raised,
    apply_mutations,
    assert_same_outcome,
    generate_mutations,
    run_greedy,
    spec_fields,
    verifier_over,
)
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import cadence_memplan.exir

pytestmark = pytest.mark.executorch

SWEEP_SEEDS = range(300)


def check_greedy(case: GreedyCase) -> Planned | Raised:
    """The differential check of one case, under each of our object searches (the
    output-sensitive one and the naive scan); returns exir's outcome."""
    specs = build_specs(case.specs)
    exir = run_greedy(exir_greedy, case, specs)
    for search in cadence_memplan.OCCUPANCIES:
        ours = run_greedy(
            functools.partial(cadence_memplan.exir.greedy, occupancy=search), case, specs
        )
        assert_same_outcome(exir, ours, case)
    return exir


@pytest.mark.parametrize("name", NAMED_GREEDY_CASES)
def test_named_case_matches_exir(name: str) -> None:
    case = NAMED_GREEDY_CASES[name]
    if name == "input_mem_buffer_sizes not a list":
        # exir asserts the attribute is a list; graph_module_with() always sets one.
        specs = build_specs(case.specs)
        outcomes = []
        for planner in (exir_greedy, cadence_memplan.exir.greedy):
            copies = copy.deepcopy(specs)
            graph_module = graph_module_with(None)
            graph_module.input_mem_buffer_sizes = (1, 2)
            try:
                planner(case.alignment, copies, graph_module, None, 0)
                outcomes.append(None)
            except Exception as error:  # noqa: BLE001 - compared below
                outcomes.append(error)
        assert isinstance(outcomes[0], AssertionError)
        assert isinstance(outcomes[1], type(outcomes[0])), outcomes[1]
        assert str(outcomes[1]) == str(outcomes[0])
        return
    check_greedy(case)


EXPECTED_ERRORS = {
    "storage base that is not planned: unresolvable": "InternalError",
    "storage cycle: unresolvable": "InternalError",
    "storage offset misaligned": "InternalError",
    "storage offset negative": "InternalError",
    "storage-backed spec overruns its base": "InternalError",
    "realign reorders sizes: exir's 'not sorted' assertion": "AssertionError",
    "a spec listed twice": "AssertionError",
    "a lifetime of None": "TypeError",
    "alignment 0": "ZeroDivisionError",
}


@pytest.mark.parametrize("name", EXPECTED_ERRORS)
def test_named_error_cases_do_raise_in_exir(name: str) -> None:
    """The error cases above reach the error they are named for (so they test it)."""
    case = NAMED_GREEDY_CASES[name]
    outcome = run_greedy(exir_greedy, case, build_specs(case.specs))
    assert isinstance(outcome, Raised)
    assert outcome.summary[0] == EXPECTED_ERRORS[name]


@pytest.mark.parametrize("seed", SWEEP_SEEDS)
def test_random_case_matches_exir(seed: int) -> None:
    check_greedy(generate_greedy_case(RandomChooser(random.Random(seed)), max_specs=60))


@pytest.mark.parametrize("seed", range(100))
def test_random_case_of_intervals_matches_exir(seed: int) -> None:
    """The sweep's cases without inverted lifetimes, where occupancy="tree" (and "auto"
    on larger graphs) answers from the tree over the shared objects."""
    case = generate_greedy_case(RandomChooser(random.Random(20_000 + seed)), max_specs=60)
    check_greedy(without_inverted_lifetimes(case))


@pytest.mark.slow
@pytest.mark.parametrize("seed", range(20))
def test_large_random_case_matches_exir(seed: int) -> None:
    """Cases of up to 2,000 specs, where the core's index has many objects to search
    (seconds each: exir is quadratic)."""
    check_greedy(generate_greedy_case(RandomChooser(random.Random(10_000 + seed)), max_specs=2_000))


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.data())
def test_hypothesis_case_matches_exir(data: st.DataObject) -> None:
    check_greedy(generate_greedy_case(HypothesisChooser(data.draw)))


def test_random_cases_reach_every_path() -> None:
    """The seeded sweep reaches what it is meant to test: plans, each of exir's errors,
    offsets inside a shared object (the second pass), several memories, padding."""
    seen: Counter[str] = Counter()
    for seed in SWEEP_SEEDS:
        case = generate_greedy_case(RandomChooser(random.Random(seed)), max_specs=60)
        specs = build_specs(case.specs)
        outcome = run_greedy(exir_greedy, case, specs)
        if isinstance(outcome, Raised):
            seen[outcome.summary[0]] += 1
            continue
        seen["planned"] += 1
        objects: dict[tuple[int, int], list[int]] = {}
        for mem_id, offset, obj_id in outcome.placements.values():
            objects.setdefault((mem_id, obj_id), []).append(offset)
        if len(outcome.bufsizes) > 2:
            seen["several memories"] += 1
        if any(len(set(offsets)) > 1 for offsets in objects.values()):
            seen["offset inside an object"] += 1
        if any(s.storage_base is not None for s in case.specs):
            seen["storage-backed, planned"] += 1
    for kind in ("planned", "AssertionError", "InternalError", "several memories",
                 "offset inside an object", "storage-backed, planned"):  # fmt: skip
        assert seen[kind] >= 3, f"the sweep reaches {kind!r} only {seen[kind]} times: {seen}"


def test_same_set_gives_the_same_plan() -> None:
    """exir's MemoryPlanningPass hands greedy a set; on the same set (same iteration order)
    ours plans what exir plans."""
    case = GreedyCase(tuple(spec(16 * (i % 4), (i % 5, i % 5 + 2)) for i in range(30)))
    specs = build_specs(case.specs)
    as_set = set(specs)
    before = spec_fields(specs)
    exir = exir_greedy(16, as_set, graph_module_with(None), None, 0)
    exir_plan = {id(s): (a.mem_id, a.mem_offset, a.mem_obj_id) for s, a in exir.spec_dict.items()}
    exir_fields = spec_fields(specs)
    for tensor_spec, fields in zip(specs, before, strict=True):
        tensor_spec.alignment = fields[0]
    ours = cadence_memplan.exir.greedy(16, as_set, graph_module_with(None), None, 0)
    ours_plan = {id(s): (a.mem_id, a.mem_offset, a.mem_obj_id) for s, a in ours.spec_dict.items()}
    assert ours_plan == exir_plan
    assert ours.bufsizes == exir.bufsizes
    assert spec_fields(specs) == exir_fields


def test_one_pass_iterator() -> None:
    """greedy iterates its specs once; a generator works as it does in exir."""
    case = NAMED_GREEDY_CASES["second pass: above the largest overlapping end, inside the object"]
    specs = build_specs(case.specs)
    results = []
    for planner in (exir_greedy, cadence_memplan.exir.greedy):
        copies = copy.deepcopy(specs)
        result = planner(16, (s for s in copies), graph_module_with(None), None, 0)
        index = {id(s): i for i, s in enumerate(copies)}
        results.append(
            (
                sorted(
                    (index[id(s)], a.mem_id, a.mem_offset, a.mem_obj_id)
                    for s, a in result.spec_dict.items()
                ),
                result.bufsizes,
            )
        )
    assert results[1] == results[0]


def test_suite_writes_the_same_fields() -> None:
    """Inside MemoryPlanningAlgorithmSuite (as MemoryPlanningPass runs it) the specs end
    with exir's mem_id, mem_offset and mem_obj_id."""
    case = generate_greedy_case(RandomChooser(random.Random(7)), max_specs=60)
    specs = build_specs([replace_storage(s) for s in case.specs])
    fields = []
    for planner in (exir_greedy, cadence_memplan.exir.greedy):
        copies = copy.deepcopy(specs)
        bufsizes = MemoryPlanningAlgorithmSuite(algo_list=[planner])(
            16, copies, graph_module_with(None), None, 0
        )
        fields.append((bufsizes, spec_fields(copies)))
    assert fields[1] == fields[0]
    assert any(f[4] for f in fields[0][1]), "nothing was placed above offset 0"


def replace_storage(description: SpecDescription) -> SpecDescription:
    """The description without a storage link or an incoming alignment, so it plans."""
    return replace(description, storage_base=None, alignment=16)


# --------------------------------------------------------------------------- verifier


def planned_specs(seed: int, storage: bool = True) -> list:
    """The specs of a random case that exir plans, with the suite's fields written.

    Without ``storage``, no spec is storage-backed: exir's greedy places a storage-backed
    spec inside its base without looking at the base's other tenants, so with them (and
    no ``_extend_storage_base_lifetimes`` first) its plans may fail its own verifier."""
    rng = random.Random(seed)
    while True:
        case = generate_greedy_case(RandomChooser(rng), max_specs=40)
        descriptions = case.specs if storage else [replace_storage(s) for s in case.specs]
        specs = build_specs(descriptions)
        suite = MemoryPlanningAlgorithmSuite(algo_list=[exir_greedy])
        ordered = [specs[i] for i in case.visit_order()]
        try:
            suite(case.alignment, ordered, graph_module_with(case.input_mem_buffer_sizes),
                  None, case.extra_padding)  # fmt: skip
        except Exception:  # noqa: BLE001, S112 - an input exir rejects: draw another
            continue
        return specs


def verify_outcome(verify, specs, allow: bool, alloc_graph_input: bool = True):  # type: ignore[no-untyped-def]
    verifier = verifier_over(specs, alloc_graph_input)
    try:
        return ("count", verify(verifier, allow))
    except Exception as error:  # noqa: BLE001 - compared
        return (type(error).__name__, str(error))


def our_verify_outcomes(specs, allow: bool) -> list:  # type: ignore[no-untyped-def]
    """Ours, under each object search (the sweep and the naive all-pairs scan)."""
    return [
        verify_outcome(
            functools.partial(cadence_memplan.exir.verify_storage_reuse, occupancy=search),
            specs,
            allow,
        )
        for search in cadence_memplan.OCCUPANCIES
    ]


def exir_verify(verifier, allow: bool) -> int:  # type: ignore[no-untyped-def]
    return verifier.verify_storage_reuse(allow)


@pytest.mark.parametrize("allow", [False, True])
@pytest.mark.parametrize("seed", range(40))
def test_verify_storage_reuse_on_valid_plans(seed: int, allow: bool) -> None:
    specs = planned_specs(seed, storage=False)
    before = spec_fields(specs)
    exir = verify_outcome(exir_verify, specs, allow)
    for ours in our_verify_outcomes(specs, allow):
        assert ours == exir
    assert exir[0] == "count"
    assert spec_fields(specs) == before


@pytest.mark.parametrize("allow", [False, True])
@pytest.mark.parametrize("seed", range(80))
def test_verify_storage_reuse_on_broken_plans(seed: int, allow: bool) -> None:
    specs = planned_specs(1000 + seed)
    mutations = generate_mutations(RandomChooser(random.Random(seed)), specs)
    apply_mutations(specs, mutations)
    exir = verify_outcome(exir_verify, specs, allow)
    for ours in our_verify_outcomes(specs, allow):
        assert ours == exir, f"mutations={mutations}"


def test_broken_plans_reach_every_error() -> None:
    """The mutated plans above reach each of the verifier's errors, and counts too."""
    seen: Counter[str] = Counter()
    for seed in range(80):
        specs = planned_specs(1000 + seed)
        apply_mutations(specs, generate_mutations(RandomChooser(random.Random(seed)), specs))
        kind, value = verify_outcome(exir_verify, specs, False)
        seen["count" if kind == "count" else str(value)] += 1
    for kind in ("count", "Unexpected storage overlap", "Unexpected mem_obj_id mismatch",
                 "Specs do not agree on whether mem_obj_id is defined.",
                 "should have specified memory offset"):  # fmt: skip
        reached = sum(n for outcome, n in seen.items() if kind in outcome)
        assert reached >= 2, f"{kind!r} reached {reached} times: {seen}"


def test_verify_storage_reuse_named_errors() -> None:
    """Each of the verifier's checks, on hand-made plans."""

    def planned(descriptions, fields):  # type: ignore[no-untyped-def]
        specs = build_specs(descriptions)
        for tensor_spec, (mem_id, offset, obj_id) in zip(specs, fields, strict=True):
            tensor_spec.mem_id, tensor_spec.mem_offset, tensor_spec.mem_obj_id = (
                mem_id,
                offset,
                obj_id,
            )
        return specs

    cases = {
        "storage overlap": planned([spec(64, (0, 2)), spec(64, (1, 3))], [(1, 0, 0), (1, 32, 1)]),
        "obj id mismatch": planned([spec(64, (0, 2)), spec(64, (3, 4))], [(1, 0, 0), (1, 0, 1)]),
        "obj id undefined": planned([spec(64, (0, 2)), spec(64, (3, 4))], [(1, 0, 0), (1, 64, None)]),
        "offset unset": planned([spec(64, (0, 2)), spec(64, (3, 4))], [(1, 0, 0), (1, None, 1)]),
        "another memory": planned([spec(64, (0, 2)), spec(64, (1, 3))], [(1, 0, 0), (2, 0, 0)]),
        "reuse": planned([spec(64, (0, 2)), spec(64, (3, 4)), spec(16, (0, 4))],
                         [(1, 0, 0), (1, 0, 0), (1, 64, 1)]),
        "in place": planned([spec(64, (0, 2)), spec(16, (0, 2), storage_base=0, storage_base_offset=16)],
                            [(1, 0, 0), (1, 16, 0)]),
        "siblings overlap": planned(
            [spec(64, (0, 2)), spec(16, (0, 2), storage_base=0), spec(16, (0, 2), storage_base=0)],
            [(1, 0, 0), (1, 0, 0), (1, 0, 0)]),
        "storage cycle": planned(
            [spec(64, (0, 2), storage_base=1), spec(64, (0, 2), storage_base=0)],
            [(1, 0, 0), (1, 0, 0)]),
    }  # fmt: skip
    kinds = set()
    for name, specs in cases.items():
        for allow in (False, True):
            exir = verify_outcome(exir_verify, specs, allow)
            for ours in our_verify_outcomes(specs, allow):
                assert ours == exir, name
            kinds.add(exir[0] if exir[0] == "count" else exir[1][:20])
    assert len(kinds) >= 5, kinds


def test_an_untested_executorch_runs_exirs_own_greedy(monkeypatch: pytest.MonkeyPatch) -> None:
    """Outside the tested executorch range (_boundary/upstream.py) ``greedy`` hands every
    input to exir's own function, so the result is exir's and the core is never asked."""
    from cadence_memplan._boundary import upstream as _upstream
    from cadence_memplan.exir import planners, records

    calls: list[int] = []

    def exirs(*args: object, **kwargs: object) -> object:
        calls.append(1)
        return exir_greedy(*args, **kwargs)

    def no_packing(*args: object, **kwargs: object) -> object:
        raise AssertionError("the core was asked")

    monkeypatch.setattr(_upstream, "_SUPPORTED", False)
    monkeypatch.setattr(planners, "exir_greedy", exirs)  # exir's, as captured on import
    monkeypatch.setattr(records, "pack_shared_objects", no_packing)
    case = next(iter(NAMED_GREEDY_CASES.values()))
    specs = build_specs(case.specs)
    assert_same_outcome(
        run_greedy(exir_greedy, case, specs),
        run_greedy(cadence_memplan.exir.greedy, case, specs),
        case,
    )
    assert calls == [1]
