"""Final-answer extraction and grading: math answers with math-verify, exact match otherwise."""

from __future__ import annotations

import re

NUMBER = re.compile(r"-?\d[\d,]*(?:\.\d+)?(?:/\d+)?")


def _last_boxed(text: str) -> str | None:
    """Content of the last \\boxed{...} (brace-matched)."""
    start = text.rfind("\\boxed{")
    if start < 0:
        return None
    depth, i = 0, start + len("\\boxed{") - 1
    for j in range(i, len(text)):
        depth += {"{": 1, "}": -1}.get(text[j], 0)
        if depth == 0:
            return text[i + 1 : j]
    return None


def extract_answer(text: str) -> str | None:
    """The final answer of a completion: \\boxed{}, then '#### x', then 'answer is x', then the last number."""
    boxed = _last_boxed(text)
    if boxed is not None:
        return boxed.strip()
    for pattern in (r"####\s*([^\n]+)", r"answer is[:\s]*\$?([^\n$]+)"):
        found = re.findall(pattern, text, flags=re.IGNORECASE)
        if found:
            return found[-1].strip().rstrip(".")
    numbers = NUMBER.findall(text)
    return numbers[-1] if numbers else None


def normalise(answer: str) -> str:
    """An answer in a comparable form: trimmed, no dollar signs or thousands commas, ``3.0`` as ``3``, lower case."""
    answer = answer.strip().strip("$").replace(",", "").rstrip(".")
    if re.fullmatch(r"-?\d+\.0+", answer):
        answer = answer.split(".")[0]
    return answer.lower()


def grade(predicted: str | None, gold: str, *, use_math_verify: bool = True) -> bool:
    """True when the predicted final answer matches the gold answer."""
    if predicted is None:
        return False
    if normalise(predicted) == normalise(str(gold)):
        return True
    if use_math_verify:
        try:
            from math_verify import parse, verify
        except ImportError:
            return False
        try:
            return bool(verify(parse(f"${gold}$"), parse(f"${predicted}$")))
        except Exception:  # math-verify raises on unparsable expressions: not a match
            return False
    return False
