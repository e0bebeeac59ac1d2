"""Write four tiny, randomly initialised Llama checkpoints (and a byte-level BPE tokenizer trained
on examples/problems.jsonl) to benchcast-out/models/, so that `benchcast score-gold` and
`benchcast sample` run on a laptop without downloading a model.

    pip install -e ".[score]" && python examples/make_tiny_models.py

Their scores are those of random networks: this exercises the pipeline, it measures nothing.
"""

from __future__ import annotations

import json
from pathlib import Path

import tokenizers
import torch
import transformers

HERE = Path(__file__).resolve().parent
OUT = Path("benchcast-out/models")
SIZES = {"tiny-a": 32, "tiny-b": 48, "tiny-c": 64, "tiny-d": 96}  # hidden size of each checkpoint


def corpus() -> list[str]:
    rows = [json.loads(line) for line in (HERE / "problems.jsonl").read_text().splitlines() if line.strip()]
    return [f"Question: {r['question']}\nAnswer:{r['solution']}" for r in rows]


def tokenizer() -> transformers.PreTrainedTokenizerFast:
    tok = tokenizers.Tokenizer(tokenizers.models.BPE(unk_token="<unk>"))
    tok.pre_tokenizer = tokenizers.pre_tokenizers.ByteLevel(add_prefix_space=False)
    tok.decoder = tokenizers.decoders.ByteLevel()
    trainer = tokenizers.trainers.BpeTrainer(
        vocab_size=400,
        special_tokens=["<unk>", "<s>", "</s>", "<pad>"],
        initial_alphabet=tokenizers.pre_tokenizers.ByteLevel.alphabet(),
    )
    tok.train_from_iterator(corpus(), trainer)
    tok.post_processor = tokenizers.processors.TemplateProcessing(single="<s> $A", special_tokens=[("<s>", 1)])
    return transformers.PreTrainedTokenizerFast(
        tokenizer_object=tok, bos_token="<s>", eos_token="</s>", pad_token="<pad>", unk_token="<unk>"
    )


def main() -> None:
    fast = tokenizer()
    for seed, (name, hidden) in enumerate(SIZES.items()):
        config = transformers.LlamaConfig(
            vocab_size=len(fast),
            hidden_size=hidden,
            intermediate_size=2 * hidden,
            num_hidden_layers=2,
            num_attention_heads=4,
            num_key_value_heads=4,
            max_position_embeddings=512,
            bos_token_id=1,
            eos_token_id=2,
            pad_token_id=3,
        )
        torch.manual_seed(seed)
        path = OUT / name
        transformers.LlamaForCausalLM(config).save_pretrained(path)
        fast.save_pretrained(path)
        print(f"wrote {path}")


if __name__ == "__main__":
    main()
