"""Will each suite's longest request fit the build's context window? Checked before any run.

A prompt longer than the server's window fails one request at a time: the server answers 400, and
Inspect records either a sample error or (when the server says `context_length_exceeded`) the
error text as an answer stopped for length, which scores 0 on both builds alike. A plan sized for a
128K deployment, run against an 8K one, would fail late or gate on zeros. The fingerprint
says how long a context each build serves (vLLM's `max_model_len`, SGLang's `context_length`,
llama.cpp's `n_ctx`); the plan says how long the prompts are. Builds that do not say are not checked.
"""

from __future__ import annotations

import importlib
import inspect
from collections.abc import Mapping
from typing import Any

from lossgate.plan import Plan, SuitePlan
from lossgate.tokens import parse_int_list

# The task argument that sets each suite's prompt lengths, in the served model's tokens.
PROMPT_LENGTH_ARGS = {
    "long_context": "lengths",
    "code_correctness": "context_tokens",
    "patch_application": "repo_tokens",
}
# Prompts are fitted to within 1% of their target, and the chat template adds a few tokens per
# message; a request needs that much room beyond its nominal length.
FIT_TOLERANCE = 1.02
TEMPLATE_TOKENS = 64


def task_default(suite: str, argument: str) -> Any:
    """The default of one argument of the suite's `@task` function."""
    module = importlib.import_module(f"lossgate.tasks.{suite}.task")
    return inspect.signature(getattr(module, suite)).parameters[argument].default


def longest_request(plan: Plan, suite: SuitePlan) -> tuple[int, int, str] | None:
    """(longest prompt, answer tokens, where the length was set) of a suite whose prompt length is
    a task argument; None for suites whose prompts are as long as their data."""
    argument = PROMPT_LENGTH_ARGS.get(suite.name)
    if argument is None:
        return None
    where = f"suites.{suite.name}.task_args.{argument}"
    if argument in suite.task_args:
        value = suite.task_args[argument]
    else:
        value = task_default(suite.name, argument)
        where += f", the task's default {value!r}"
    prompt = max(parse_int_list(value, where))
    # eval-level generate settings (plan, then suite) override the task's own max_tokens
    answer = plan.generate_for(suite).get("max_tokens") or suite.task_args.get(
        "max_tokens", task_default(suite.name, "max_tokens"))
    return prompt, int(answer), where


def context_problems(plan: Plan, label: str, base_url: str, fingerprint: Mapping[str, Any]) -> list[str]:
    """One message per suite whose longest request would not fit this build's context window."""
    window = fingerprint.get("max_model_len")
    if not isinstance(window, int) or window <= 0:
        return []
    problems = []
    for suite in plan.suites:
        longest = longest_request(plan, suite)
        if longest is None:
            continue
        prompt, answer, where = longest
        needed = int(prompt * FIT_TOLERANCE) + TEMPLATE_TOKENS + answer
        if needed > window:
            problems.append(
                f"{label} build at {base_url} has a context window of {window:,} tokens, but suite "
                f"{suite.name} asks for prompts of {prompt:,} tokens ({where}) plus {answer:,} answer "
                f"tokens (≈{needed:,} in all): set {PROMPT_LENGTH_ARGS[suite.name]} lower in the "
                "plan, or serve a longer context (vLLM --max-model-len, SGLang --context-length, "
                "llama.cpp -c)"
            )
    return problems
