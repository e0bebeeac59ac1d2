"""Loading causal LMs: transformers (bf16 on GPU, fp32 on CPU) or vLLM."""

from __future__ import annotations

from benchcast.errors import BenchcastError

BACKENDS = ("transformers", "vllm")


def require(module: str, extra: str):
    try:
        return __import__(module)
    except ImportError:
        raise BenchcastError(f"this needs the '{module}' package: pip install 'benchcast[{extra}]'.") from None


def torch_dtype(torch, dtype: str, device: str):
    if dtype == "auto":
        return torch.bfloat16 if device.startswith("cuda") else torch.float32
    try:
        return {
            "float32": torch.float32,
            "fp32": torch.float32,
            "bfloat16": torch.bfloat16,
            "bf16": torch.bfloat16,
            "float16": torch.float16,
            "fp16": torch.float16,
        }[dtype]
    except KeyError:
        raise BenchcastError(f"unknown dtype {dtype!r}; use auto, float32, bfloat16 or float16.") from None


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
    return vllm.LLM(model=model_id, dtype=dtype)
