"""Train the tiny Llama on Python's own help text; writes ``weights.npz`` and ``config.json``.

    python -m minitvm.testing.tiny_llama.train             # about ten minutes on two idle cores
    python -m minitvm.testing.tiny_llama.train --threads 1 # on a shared machine; made the committed weights
    python -m minitvm.testing.tiny_llama.train --steps 50 --out /tmp/tiny   # a quick look

Seeded (torch, numpy, the batch order), so a rerun with the same Python (whose help text is the data),
torch and thread count retraces the same losses. On a busy machine use one thread: two threads that
lose their cores to other processes wait on each other, and a step took three times as long as on one.
The model is Hugging Face's ``LlamaForCausalLM`` itself: the trained weights are the reference with
nothing to convert.
"""

from __future__ import annotations

import argparse
import dataclasses
import math
import platform
import random
import time
from pathlib import Path

import numpy as np

from . import data
from .model import HERE, TinyLlamaConfig, build_hf_model, hf_weights, load_weights, save_config, save_weights


@dataclasses.dataclass
class Settings:
    steps: int = 800
    batch: int = 16
    block: int = 256  # tokens per training sequence (bytes: about 45 words)
    lr: float = 2e-3
    min_lr: float = 1e-4
    warmup: int = 50
    weight_decay: float = 0.1
    seed: int = 0
    threads: int = 2
    log_every: int = 25
    out: str = str(HERE)


def learning_rate(s: Settings, step: int) -> float:
    """Linear warm-up, then a cosine down to ``min_lr``."""
    if step < s.warmup:
        return s.lr * (step + 1) / s.warmup
    t = (step - s.warmup) / max(1, s.steps - s.warmup)
    return s.min_lr + 0.5 * (s.lr - s.min_lr) * (1 + math.cos(math.pi * t))


def batches(stream: np.ndarray, s: Settings, rng: np.random.Generator):
    """Random windows of ``block + 1`` tokens from the stream: inputs and next-token targets."""
    import torch

    while True:
        starts = rng.integers(0, len(stream) - s.block - 1, size=s.batch)
        rows = torch.from_numpy(np.stack([stream[i:i + s.block + 1] for i in starts]))
        yield rows[:, :-1], rows[:, 1:]


def mean_loss(model, stream: np.ndarray, block: int) -> float:
    """The mean next-token loss (nats per byte) over the stream cut into consecutive blocks."""
    import torch

    n = (len(stream) - 1) // block
    x = torch.from_numpy(stream[:n * block].reshape(n, block))
    y = torch.from_numpy(stream[1:n * block + 1].reshape(n, block))
    total = 0.0
    with torch.no_grad():
        for i in range(0, n, 16):
            logits = model(input_ids=x[i:i + 16], use_cache=False).logits
            total += torch.nn.functional.cross_entropy(logits.flatten(0, 1), y[i:i + 16].flatten(), reduction="sum")
    return float(total) / (n * block)


def optimizer(model, s: Settings):
    """AdamW with weight decay on the matrices only (not on the norms' scales)."""
    import torch

    decay = [p for p in model.parameters() if p.dim() >= 2]
    keep = [p for p in model.parameters() if p.dim() < 2]
    groups = [{"params": decay, "weight_decay": s.weight_decay}, {"params": keep, "weight_decay": 0.0}]
    return torch.optim.AdamW(groups, lr=s.lr, betas=(0.9, 0.95))


def train(s: Settings, config: TinyLlamaConfig) -> tuple[object, dict]:
    """Train from a seeded initialisation; returns the model and a record of the run."""
    import torch

    random.seed(s.seed); np.random.seed(s.seed); torch.manual_seed(s.seed)
    torch.set_num_threads(s.threads)
    train_names, _ = data.split_topics()
    stream = data.token_stream(train_names)
    model = build_hf_model(config).train()
    opt = optimizer(model, s)
    start, window, log = time.perf_counter(), [], []
    for step, (x, y) in zip(range(s.steps), batches(stream, s, np.random.default_rng(s.seed))):
        for group in opt.param_groups:
            group["lr"] = learning_rate(s, step)
        logits = model(input_ids=x, use_cache=False).logits
        loss = torch.nn.functional.cross_entropy(logits.flatten(0, 1), y.flatten())
        opt.zero_grad(set_to_none=True)
        loss.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        opt.step()
        window.append(loss.item())
        if (step + 1) % s.log_every == 0 or step + 1 == s.steps:
            elapsed = time.perf_counter() - start
            log.append((step + 1, sum(window) / len(window)))
            print(f"step {step + 1:5d}  loss {log[-1][1]:.4f}  lr {learning_rate(s, step):.2e}  "
                  f"{(step + 1) * s.batch * s.block / elapsed:6.0f} tokens/s  {elapsed:6.0f} s", flush=True)
            window = []
    record = {"settings": {k: v for k, v in dataclasses.asdict(s).items() if k != "out"},
              "final_train_loss": round(log[-1][1], 4), "seconds": round(time.perf_counter() - start),
              "train_tokens": len(stream), "python": platform.python_version(), "torch": torch.__version__,
              "help_text_sha256": data.text_digest()}
    return model.eval(), record


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    for f in dataclasses.fields(Settings):
        parser.add_argument(f"--{f.name.replace('_', '-')}", type=type(f.default), default=f.default)
    s = Settings(**vars(parser.parse_args(argv)))
    config = TinyLlamaConfig()
    model, record = train(s, config)
    out = Path(s.out)
    out.mkdir(parents=True, exist_ok=True)
    save_weights(hf_weights(model), out / "weights.npz")
    # the loss of the model as stored (float16 weights, widened back), on held-out topics

    stored = build_hf_model(config, load_weights(out / "weights.npz", config))
    record["held_out_loss"] = round(mean_loss(stored, data.token_stream(data.split_topics()[1]), s.block), 4)
    save_config(config, out / "config.json", record)
    print(f"final training loss {record['final_train_loss']}, held-out loss {record['held_out_loss']} "
          f"nats/byte; wrote {out / 'weights.npz'} and {out / 'config.json'}")


if __name__ == "__main__":
    main()
