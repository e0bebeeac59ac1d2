"""Loading causal LMs: transformers (bf16 on GPU, fp32 on CPU) or vLLM."""

from __future__ import annotations

import importlib
import importlib.util
import os

from benchcast.errors import BenchcastError

BACKENDS = ("transformers", "vllm")

# read by the libraries (and by Ray workers and subprocesses, which inherit the environment)
QUIET_ENVIRONMENT = {
    "TQDM_DISABLE": "1",
    "HF_HUB_DISABLE_PROGRESS_BARS": "1",
    "TRANSFORMERS_VERBOSITY": "error",
    "DATASETS_VERBOSITY": "error",
    "TRANSFORMERS_NO_ADVISORY_WARNINGS": "1",
}
# per library: (module holding the switches, quiet calls, verbose calls)
_LOGGING = (("set_verbosity_error", "disable_progress_bar"), ("set_verbosity_warning", "enable_progress_bar"))
LIBRARY_SWITCHES = (
    ("transformers.utils.logging", *_LOGGING),
    ("huggingface_hub.utils", ("disable_progress_bars",), ("enable_progress_bars",)),
    ("datasets.utils.logging", *_LOGGING),
)


def quiet_libraries(verbose: bool = False) -> None:
    """Silence (or, with ``verbose``, restore) the progress bars and info logs of installed HF libraries and tqdm."""
    if verbose:
        for name in QUIET_ENVIRONMENT:
            os.environ.pop(name, None)
    else:
        os.environ.update(QUIET_ENVIRONMENT)
    for module_name, quiet, loud in LIBRARY_SWITCHES:
        if importlib.util.find_spec(module_name.split(".")[0]) is None:
            continue
        module = importlib.import_module(module_name)
        for call in loud if verbose else quiet:
            getattr(module, call)()


def require(module: str, extra: str):
    """Import an optional dependency, or say which extra installs it."""
    try:
        return __import__(module)
    except ImportError:
        raise BenchcastError(f"this needs the '{module}' package: pip install 'benchcast[{extra}]'.") from None


# benchcast's dtype names -> the canonical name; "auto" is bf16 on GPU and fp32 on CPU.
DTYPES = {
    "auto": "auto",
    **dict.fromkeys(("float32", "fp32", "float"), "float32"),
    **dict.fromkeys(("bfloat16", "bf16"), "bfloat16"),
    **dict.fromkeys(("float16", "fp16", "half"), "float16"),
}


def _canonical_dtype(dtype: str) -> str:
    """benchcast's canonical name for a dtype alias ("bf16" -> "bfloat16"; "auto" stays "auto")."""
    try:
        return DTYPES[dtype]
    except KeyError:
        raise BenchcastError(f"unknown dtype {dtype!r}; use auto, float32, bfloat16 or float16.") from None


def load_transformers(model_id: str, dtype: str = "auto", device: str | None = None):
    """(model, tokenizer, device) for a Hugging Face id or local path, in eval mode."""
    torch = require("torch", "score")
    transformers = require("transformers", "score")
    device = device or ("cuda" if torch.cuda.is_available() else "cpu")
    name = _canonical_dtype(dtype)  # "auto": bf16 on CUDA, fp32 elsewhere
    auto = torch.bfloat16 if device.startswith("cuda") else torch.float32
    try:
        tokenizer = transformers.AutoTokenizer.from_pretrained(model_id)
        model = transformers.AutoModelForCausalLM.from_pretrained(
            model_id, dtype=auto if name == "auto" else getattr(torch, name)
        )
    except (OSError, ValueError) as exc:
        raise BenchcastError(f"model {model_id!r} could not be loaded ({exc}).") from exc
    model.to(device).eval()
    if tokenizer.pad_token_id is None:
        tokenizer.pad_token = tokenizer.eos_token
    return model, tokenizer, device


def load_vllm(model_id: str, dtype: str = "auto"):
    """A vLLM engine for a Hugging Face id or local path."""
    vllm = require("vllm", "vllm")
    name = _canonical_dtype(dtype)  # the names vLLM's LLM(dtype=...) accepts, "auto" as bf16
    try:
        return vllm.LLM(model=model_id, dtype="bfloat16" if name == "auto" else name)
    except (OSError, ValueError) as exc:
        raise BenchcastError(f"model {model_id!r} could not be loaded by vLLM ({exc}).") from exc


def prompt_ids(tokenizer, text: str) -> list[int]:
    """A prompt's token ids with special tokens; an empty one becomes BOS (else EOS): a first token needs a context."""
    ids = tokenizer(text, add_special_tokens=True)["input_ids"]
    return (
        list(ids) if ids else [tokenizer.bos_token_id if tokenizer.bos_token_id is not None else tokenizer.eos_token_id]
    )


def in_halves(batch: list, work) -> dict:
    """``work(chunk)`` per item of ``batch``, a chunk out of memory retried in halves; a failure is its exception."""
    results, pending = {}, [batch]
    while pending:
        chunk = pending.pop()
        try:
            results.update(zip(chunk, work(chunk), strict=True))
        except Exception as exc:  # one bad batch must not lose the others
            if ("out of memory" in str(exc).lower() or type(exc).__name__ == "OutOfMemoryError") and len(chunk) > 1:
                torch = require("torch", "score")
                if torch.cuda.is_available():
                    torch.cuda.empty_cache()
                pending += [chunk[len(chunk) // 2 :], chunk[: len(chunk) // 2]]
            else:
                results.update(dict.fromkeys(chunk, exc))
    return results
