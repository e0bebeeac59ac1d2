"""Loading causal LMs: transformers (bf16 on GPU, fp32 on CPU) or vLLM."""

from __future__ import annotations

from benchcast.errors import BenchcastError

BACKENDS = ("transformers", "vllm")


def require(module: str, extra: str):
    try:
        return __import__(module)
    except ImportError:
        raise BenchcastError(f"this needs the '{module}' package: pip install 'benchcast[{extra}]'.") from None


# benchcast's dtype names -> the canonical name; "auto" is bf16 on GPU and fp32 on CPU.
DTYPES = {
    "auto": "auto",
    "float32": "float32",
    "fp32": "float32",
    "float": "float32",
    "bfloat16": "bfloat16",
    "bf16": "bfloat16",
    "float16": "float16",
    "fp16": "float16",
    "half": "float16",
}


def canonical_dtype(dtype: str) -> str:
    try:
        return DTYPES[dtype]
    except KeyError:
        raise BenchcastError(f"unknown dtype {dtype!r}; use auto, float32, bfloat16 or float16.") from None


def torch_dtype(torch, dtype: str, device: str):
    name = canonical_dtype(dtype)
    if name == "auto":
        return torch.bfloat16 if device.startswith("cuda") else torch.float32
    return getattr(torch, name)


def vllm_dtype(dtype: str) -> str:
    """The name vLLM's ``LLM(dtype=...)`` accepts ("float32", "bfloat16", "float16").

    benchcast's "auto" means bf16 on GPU, where vLLM runs, so it is passed as "bfloat16" (vLLM's
    own "auto" would follow the checkpoint's dtype, e.g. fp16 for an fp32 checkpoint)."""
    name = canonical_dtype(dtype)
    return "bfloat16" if name == "auto" else name


def load_transformers(model_id: str, dtype: str = "auto", device: str | None = None):
    """(model, tokenizer, device) for a Hugging Face id or local path, in eval mode."""
    torch = require("torch", "score")
    transformers = require("transformers", "score")
    device = device or ("cuda" if torch.cuda.is_available() else "cpu")
    try:
        tokenizer = transformers.AutoTokenizer.from_pretrained(model_id)
        model = transformers.AutoModelForCausalLM.from_pretrained(model_id, dtype=torch_dtype(torch, dtype, device))
    except (OSError, ValueError) as exc:
        raise BenchcastError(f"model {model_id!r} could not be loaded ({exc}).") from exc
    model.to(device).eval()
    if tokenizer.pad_token_id is None:
        tokenizer.pad_token = tokenizer.eos_token
    return model, tokenizer, device


def load_vllm(model_id: str, dtype: str = "auto"):
    vllm = require("vllm", "vllm")
    try:
        return vllm.LLM(model=model_id, dtype=vllm_dtype(dtype))
    except (OSError, ValueError) as exc:
        raise BenchcastError(f"model {model_id!r} could not be loaded by vLLM ({exc}).") from exc
