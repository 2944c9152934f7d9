"""`lossgate/code_correctness` without a sandbox: problems, answer extraction, prompts, dataset."""

from __future__ import annotations

import textwrap

import pytest

from lossgate.tasks.code_correctness.dataset import build_dataset
from lossgate.tasks.code_correctness.extract import check_program, extract_completion
from lossgate.tasks.code_correctness.problems import load_problems, problems_by_id
from lossgate.tokens import CharEstimate


def test_all_164_problems_load_from_the_installed_package():
    problems = load_problems()
    assert len(problems) == 164
    assert len({p.task_id for p in problems}) == 164
    for problem in problems:
        compile(problem.reference_source + "\n" + problem.test, problem.task_id, "exec")
        assert f"def {problem.entry_point}(" in problem.prompt


PROBLEM = problems_by_id()["HumanEval/2"]  # truncate_number: body is one line


def _body_after_prompt(code: str) -> str:
    """What the module defines once the completion follows the prompt."""
    namespace: dict = {}
    exec(PROBLEM.prompt + ("" if code.startswith(" ") else "\n\n") + code, namespace)
    return namespace[PROBLEM.entry_point](3.5)


@pytest.mark.parametrize(
    "reply",
    [
        "```python\n" + PROBLEM.reference_source + "```",
        "Sure, here it is:\n```py\n" + PROBLEM.reference_source + "```\nIt takes the modulus.",
        PROBLEM.canonical_solution,  # bare body, indented
        "The answer:\n\n" + textwrap.dedent(PROBLEM.canonical_solution) + "\nHope that helps.",
        "<think>maybe ```python\nbroken(\n```</think>\n```python\n" + PROBLEM.reference_source + "```",
        "```python\n" + PROBLEM.reference_source,  # cut off by max_tokens: no closing fence
        "```python\nimport math\n\n" + PROBLEM.reference_source
        + "\n\nif __name__ == '__main__':\n    raise SystemExit(1)\n```",
    ],
    ids=["fenced", "prose-around", "bare-body", "dedented-body", "think", "unclosed", "main-guard"],
)
def test_extraction_recovers_working_code_from_many_reply_shapes(reply):
    extraction = extract_completion(reply, PROBLEM.prompt, PROBLEM.entry_point)
    assert extraction.how in ("fenced", "bare")
    assert "__main__" not in extraction.code
    assert _body_after_prompt(extraction.code) == 0.5


def test_extraction_prefers_the_block_defining_the_function():
    reply = (
        "Usage:\n```python\nprint(truncate_number(3.5))\n```\nCode:\n```python\n"
        + PROBLEM.reference_source
        + "```"
    )
    extraction = extract_completion(reply, PROBLEM.prompt, PROBLEM.entry_point)
    assert "def truncate_number" in extraction.code


def test_unusable_replies_are_still_run_and_labelled():
    assert extract_completion("", PROBLEM.prompt, PROBLEM.entry_point).how == "empty"
    assert extract_completion("I cannot do that.", PROBLEM.prompt, PROBLEM.entry_point).how == (
        "bare-unparsed"
    )


def test_check_program_calls_check_on_the_entry_point():
    program = check_program(PROBLEM.prompt, "    return 0.0\n", PROBLEM.test, PROBLEM.entry_point)
    assert program.rstrip().endswith(f"check({PROBLEM.entry_point})")
    compile(program, "program", "exec")


def test_samples_come_in_whole_clusters_for_limit():
    dataset = build_dataset([0, 2000], seed=3, depth=0.5, counter=CharEstimate())
    assert len(dataset) == 2 * 164
    first = list(dataset)[:6]
    clusters = [s.metadata["cluster"] for s in first]
    assert clusters[0::2] == clusters[1::2]  # each problem at both lengths, next to each other
    assert [s.metadata["length_bucket"] for s in first] == [0, 2000] * 3
    assert len({str(s.id) for s in dataset}) == len(dataset)
    # another seed, another order
    other = build_dataset([0], seed=4, depth=0.5, counter=CharEstimate())
    assert [s.metadata["cluster"] for s in list(other)[:3]] != clusters[0::2]


@pytest.mark.parametrize("target", [4000, 16000])
def test_context_prompts_reach_their_token_target(target):
    counter = CharEstimate()
    dataset = build_dataset([target], seed=0, depth=0.5, counter=counter)
    for sample in list(dataset)[:5]:
        measured = counter.count(sample.input)
        assert measured == sample.metadata["input_tokens"]
        assert 0.9 * target <= measured <= 1.02 * target
        problem = problems_by_id()[sample.metadata["problem_id"]]
        # the problem sits inside the context, not after it, and the task names its file
        position = sample.input.index(problem.prompt)
        assert 0.25 < position / len(sample.input) < 0.75
        assert f"`{problem.entry_point}`" in sample.input[-400:]


def test_same_problem_gets_a_growing_context_across_lengths():
    dataset = list(build_dataset([0, 4000, 16000], seed=0, depth=0.5, counter=CharEstimate()))
    bare, short, long = dataset[:3]
    assert bare.metadata["cluster"] == short.metadata["cluster"] == long.metadata["cluster"]
    assert bare.metadata["depth"] == 0.0
    assert "# file:" not in bare.input and "# file:" in short.input
    assert len(bare.input) < len(short.input) < len(long.input)
