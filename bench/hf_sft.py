"""The transformers + PEFT baseline for bench_train.py: the training job ms-swift's `swift sft` runs (HF Trainer,
PEFT LoRA on all linear layers, the qwen3 template's non-thinking encoding, loss on the reply only), written out
with nothing but transformers, peft and torch, for machines where ms-swift itself is not installed (the GPU
machine). Same hyper-parameters as swift's and ms-swift's defaults: AdamW (fused), weight decay 0.1, betas
(0.9, 0.95), cosine schedule, no warm-up, clip 1.0, LoRA r 8 / alpha 32 / dropout 0.05.

    python bench/hf_sft.py --model DIR --data data.jsonl --train_type lora --steps 10 --batch 4 \
        --max_length 128 --torch_dtype bfloat16 --device cuda --result out.json

Writes {"step_times": [...], "peak_gib": ...} to --result: seconds of each optimizer step (the Trainer's step
begin to step end, synchronised on CUDA) and the peak memory (CUDA: the caching allocator's peak reserved bytes,
what ms-swift logs as memory(GiB); CPU: the process's peak resident set).
"""
import argparse
import json
import resource
import time


def encode(tok, row, max_length):
    """input_ids and labels (-100 on the prompt) as the qwen3 template renders a one-turn non-thinking chat."""
    user = next(m["content"] for m in row["messages"] if m["role"] == "user")
    reply = next(m["content"] for m in row["messages"] if m["role"] == "assistant")
    prompt = f"<|im_start|>user\n{user}<|im_end|>\n<|im_start|>assistant\n<think>\n\n</think>\n\n"
    p = tok(prompt, add_special_tokens=False)["input_ids"]
    r = tok(f"{reply}<|im_end|>\n", add_special_tokens=False)["input_ids"]
    ids = (p + r)[:max_length]
    return {"input_ids": ids, "labels": ([-100] * len(p) + r)[:max_length]}


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--model", required=True)
    ap.add_argument("--data", required=True)
    ap.add_argument("--train_type", choices=["full", "lora"], default="lora")
    ap.add_argument("--steps", type=int, default=10)
    ap.add_argument("--batch", type=int, default=4)
    ap.add_argument("--max_length", type=int, default=128)
    ap.add_argument("--learning_rate", type=float, default=1e-4)
    ap.add_argument("--torch_dtype", choices=["float32", "bfloat16"], default="float32")
    ap.add_argument("--gradient_checkpointing", choices=["true", "false"], default="false")
    ap.add_argument("--device", choices=["cpu", "cuda"], default="cpu")
    ap.add_argument("--output_dir", required=True)
    ap.add_argument("--result", required=True)
    args = ap.parse_args()

    import torch
    import transformers
    from transformers import AutoModelForCausalLM, AutoTokenizer, Trainer, TrainerCallback, TrainingArguments

    tok = AutoTokenizer.from_pretrained(args.model)
    rows = [encode(tok, json.loads(line), args.max_length) for line in open(args.data) if line.strip()]
    dtype = torch.bfloat16 if args.torch_dtype == "bfloat16" else torch.float32
    model = AutoModelForCausalLM.from_pretrained(args.model, dtype=dtype)
    if args.train_type == "lora":
        import peft
        cfg = peft.LoraConfig(r=8, lora_alpha=32, lora_dropout=0.05, target_modules="all-linear",
                              task_type="CAUSAL_LM")
        model = peft.get_peft_model(model, cfg)

    def collate(batch):
        n = max(len(b["input_ids"]) for b in batch)
        pad = tok.pad_token_id if tok.pad_token_id is not None else 0
        ids = torch.tensor([b["input_ids"] + [pad] * (n - len(b["input_ids"])) for b in batch])
        labels = torch.tensor([b["labels"] + [-100] * (n - len(b["labels"])) for b in batch])
        mask = torch.tensor([[1] * len(b["input_ids"]) + [0] * (n - len(b["input_ids"])) for b in batch])
        return {"input_ids": ids, "labels": labels, "attention_mask": mask}

    class StepTimer(TrainerCallback):
        def __init__(self):
            self.times, self.start = [], None

        def on_step_begin(self, *_, **__):
            if args.device == "cuda":
                torch.cuda.synchronize()
            self.start = time.perf_counter()

        def on_step_end(self, *_, **__):
            if args.device == "cuda":
                torch.cuda.synchronize()
            self.times.append(time.perf_counter() - self.start)

    timer = StepTimer()
    targs = TrainingArguments(
        output_dir=args.output_dir, per_device_train_batch_size=args.batch, gradient_accumulation_steps=1,
        max_steps=args.steps, learning_rate=args.learning_rate, weight_decay=0.1, adam_beta1=0.9, adam_beta2=0.95,
        lr_scheduler_type="cosine", warmup_steps=0, max_grad_norm=1.0, logging_steps=1, save_strategy="no",
        report_to="none", bf16=args.torch_dtype == "bfloat16", use_cpu=args.device == "cpu",
        gradient_checkpointing=args.gradient_checkpointing == "true",
        gradient_checkpointing_kwargs={"use_reentrant": False}, dataloader_num_workers=0,
        remove_unused_columns=False, seed=42)
    trainer = Trainer(model=model, args=targs, train_dataset=rows, data_collator=collate, callbacks=[timer])
    trainer.train()
    if args.device == "cuda":
        peak = torch.cuda.max_memory_reserved() / 2**30
    else:
        peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 2**20
    with open(args.result, "w") as f:
        json.dump({"step_times": timer.times, "peak_gib": peak, "transformers": transformers.__version__,
                   "torch": torch.__version__}, f)


if __name__ == "__main__":
    main()
