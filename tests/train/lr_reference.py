"""Learning rates of transformers' get_scheduler at every step, the reference for lr_schedule_test.cpp.

usage: lr_reference.py OUT.json   (exit 77 when torch/transformers are missing)
"""
import json
import math
import sys

try:
    import torch
    from transformers import get_scheduler
except ImportError as e:  # the C++ test turns 77 into a visible skip
    print(f"needs torch and transformers: {e}")
    sys.exit(77)

LR = 3e-4
CASES = [
    # (type, warmup, total, scheduler_specific_kwargs)
    ("linear", 0, 50, {}),
    ("linear", 7, 50, {}),
    ("linear", 1, 1, {}),
    ("linear", 10, 10, {}),
    ("cosine", 0, 40, {}),
    ("cosine", 5, 97, {}),
    ("cosine", 3, 3, {}),
    ("constant", 0, 20, {}),
    ("constant_with_warmup", 0, 20, {}),
    ("constant_with_warmup", 6, 20, {}),
    ("cosine_with_min_lr", 4, 60, {"min_lr_rate": 0.1}),
    ("cosine_with_min_lr", 0, 33, {"min_lr": 1e-5}),
    ("cosine_with_min_lr", 12, 25, {"min_lr_rate": 0.0}),
]

cases = []
for name, warmup, total, kwargs in CASES:
    param = torch.nn.Parameter(torch.zeros(1))
    opt = torch.optim.SGD([param], lr=LR)
    sched = get_scheduler(name, opt, num_warmup_steps=warmup, num_training_steps=total,
                          scheduler_specific_kwargs=dict(kwargs))
    lrs = []
    for _ in range(total + 3):  # a few steps past the end too
        lrs.append(sched.get_last_lr()[0])
        opt.step()
        sched.step()
    cases.append({"type": name, "warmup": warmup, "total": total, "lr": LR, "kwargs": kwargs, "lrs": lrs})

# transformers 4's TrainingArguments.get_warmup_steps with warmup_steps=0: math.ceil(total * warmup_ratio).
ratios = []
for ratio in (0.0, 0.03, 0.05, 0.07, 0.1, 0.25, 1.0 / 3.0, 0.5, 1.0):
    for total in (1, 7, 30, 100, 333, 1000):
        ratios.append({"ratio": ratio, "total": total, "warmup": math.ceil(total * ratio)})

with open(sys.argv[1], "w") as f:
    json.dump({"cases": cases, "ratios": ratios}, f)
