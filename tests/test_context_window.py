"""A plan whose prompts do not fit a build's context window is refused before any run, by name."""

from __future__ import annotations

from lossgate.context_window import context_problems, longest_request
from lossgate.plan import parse_plan

PLAN = parse_plan({
    "generate": {"max_tokens": 200},
    "suites": {
        "long_context": {"task_args": {"lengths": "1k,16k", "max_tokens": 32}},
        "code_correctness": {"task_args": {"context_tokens": "0,4000"}, "generate": {"max_tokens": 300}},
        "patch_application": {},
        "tool_calling": {},
    },
})


def test_longest_request_reads_the_plan_then_the_task_defaults():
    by = {s.name: longest_request(PLAN, s) for s in PLAN.suites}
    # eval-level max_tokens (plan, then suite) wins over the task argument, as in Inspect
    assert by["long_context"][:2] == (16384, 200)
    assert by["code_correctness"][:2] == (4000, 300)
    prompt, _, where = by["patch_application"]
    assert prompt == 0 and "task's default" in where  # repo_tokens not set: the task's own default
    assert by["tool_calling"] is None  # prompts as long as the data: nothing to check


def test_a_window_too_short_for_a_suite_is_named_with_the_setting():
    [problem] = context_problems(PLAN, "candidate", "http://gpu-b:8000/v1", {"max_model_len": 8192})
    assert "candidate build at http://gpu-b:8000/v1" in problem and "8,192" in problem
    assert "suites.long_context.task_args.lengths" in problem and "16,384" in problem
    assert context_problems(PLAN, "candidate", "u", {"max_model_len": 32768}) == []
    # a server that does not say how long a context it serves is not second-guessed
    assert context_problems(PLAN, "candidate", "u", {"max_model_len": None}) == []
