"""HumanEval samples at one or more prompt lengths, in an order that suits `--limit`.

Problems are shuffled once by `seed`; each problem then appears at every requested length before
the next problem starts, so the first N samples are whole clusters (one problem at all lengths):
paired across lengths, which is what a per-length comparison needs.
"""

from __future__ import annotations

import random
from collections.abc import Sequence

from inspect_ai.dataset import MemoryDataset, Sample

from lossgate.corpus import code_context, python_version
from lossgate.tasks.code_correctness.problems import Problem, load_problems
from lossgate.tasks.code_correctness.prompt import (
    bare_prompt,
    instruction_overhead,
    repository_prompt,
)
from lossgate.tokens import CharEstimate

SUITE = "code_correctness"
AFTER_SEED_OFFSET = 7_919


def ordered_problems(seed: int) -> list[Problem]:
    problems = list(load_problems())
    random.Random(seed).shuffle(problems)
    return problems


def context_seed(seed: int, problem: Problem) -> int:
    # Stable across processes (no hash()); the same problem gets the same files at every length,
    # each longer context extending the shorter one.
    return seed * 1_000_003 + problem.number


def problem_prompt(
    problem: Problem, target_tokens: int, seed: int, depth: float, counter: CharEstimate
) -> str:
    if target_tokens == 0:
        return bare_prompt(problem)
    room = target_tokens - counter.count(instruction_overhead(problem))
    chars = int(max(room, 0) * counter.chars_per_token)
    # Two independent runs of files put the problem at `depth` exactly, whatever the file sizes;
    # each run extends itself as the length grows, so longer contexts contain shorter ones.
    before = code_context(int(depth * chars), context_seed(seed, problem))
    after = code_context(chars - len(before), context_seed(seed, problem) + AFTER_SEED_OFFSET)
    return repository_prompt(problem, before, after)


def build_dataset(
    lengths: Sequence[int], seed: int, depth: float, counter: CharEstimate
) -> MemoryDataset:
    samples = []
    for problem in ordered_problems(seed):
        for target in lengths:
            text = problem_prompt(problem, target, seed, depth, counter)
            samples.append(
                Sample(
                    id=f"{problem.task_id.replace('/', '-')}@{target}",
                    input=text,
                    target=problem.canonical_solution,
                    metadata={
                        "suite": SUITE,
                        "problem_id": problem.task_id,
                        "cluster": problem.task_id,
                        "length_bucket": target,
                        "input_tokens": counter.count(text),
                        "input_tokens_source": counter.name,
                        "depth": depth if target else 0.0,
                        "entry_point": problem.entry_point,
                        "corpus_python": python_version(),
                    },
                )
            )
    return MemoryDataset(samples, name=f"humaneval-ctx{'-'.join(map(str, lengths))}")
