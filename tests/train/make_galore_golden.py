"""Writes tests/train/galore_golden.safetensors: galore-torch's GaLoreAdamW (the optimizer ms-swift's --use_galore
builds) on fixed parameters and gradients, for tests/train/galore_test.cpp to compare swift's GaLoreAdamW with.

Each case is one optimizer over one parameter, run for STEPS steps at a changing learning rate with the
projection recomputed every `update_proj_gap` steps. Stored: "<case>.param.<k>" (k = 0 before the first step),
"<case>.grad.<k>" (k = 1..STEPS), "lrs"; the cases' settings in the metadata ("cases", JSON).

Usage: .venv/bin/python tests/train/make_galore_golden.py   (needs galore-torch: pip install galore-torch)
"""
import json
import os
import warnings

import torch
from galore_torch import GaLoreAdamW
from safetensors.torch import save_file

STEPS = 7
LRS = [1e-2, 8e-3, 6e-3, 5e-3, 4e-3, 2e-3, 1e-3]
BETAS, EPS = (0.9, 0.95), 1e-8

# name, shape, GaLore settings (None: a parameter without projection), weight decay
CASES = [
    ("std_tall", [24, 16], dict(rank=4, update_proj_gap=3, scale=0.25, proj_type="std"), 0.1),
    ("std_wide", [12, 20], dict(rank=5, update_proj_gap=3, scale=0.25, proj_type="std"), 0.1),
    ("reverse_std_tall", [20, 12], dict(rank=3, update_proj_gap=2, scale=1.0, proj_type="reverse_std"), 0.0),
    ("reverse_std_wide", [10, 16], dict(rank=3, update_proj_gap=2, scale=1.0, proj_type="reverse_std"), 0.05),
    ("right_wide", [10, 18], dict(rank=4, update_proj_gap=4, scale=0.5, proj_type="right"), 0.1),
    ("left_tall", [18, 10], dict(rank=4, update_proj_gap=4, scale=0.5, proj_type="left"), 0.1),
    ("full", [16, 12], dict(rank=4, update_proj_gap=3, scale=0.25, proj_type="full"), 0.1),
    ("rank_above_short_side", [8, 6], dict(rank=10, update_proj_gap=3, scale=1.0, proj_type="std"), 0.0),
    ("unprojected_bias", [16], None, 0.0),
    ("unprojected_decayed_matrix", [16, 8], None, 0.1),
]
# Per-case eps where the global one would test the LAPACK build instead of the algorithm: right after each SVD the
# full projection U^T G V^T is diagonal, its off-diagonal entries rounding noise (~1e-7 of the largest singular
# value) that differs between CPUs and BLAS builds; with eps 1e-8 Adam's first step turns that noise into +-1
# updates (0.0024 apart on an AMD EPYC against the Intel machine the golden was first made on). An eps above the
# noise and below the real entries keeps the case about GaLore.
CASE_EPS = {"full": 0.1}


def main():
    torch.manual_seed(0)
    tensors = {"lrs": torch.tensor(LRS, dtype=torch.float64)}
    meta = []
    for name, shape, galore, wd in CASES:
        p = torch.nn.Parameter(torch.randn(shape))
        group = {"params": [p], "weight_decay": wd}
        if galore:
            group.update(galore)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # galore-torch's AdamW warns that transformers' AdamW is deprecated
            opt = GaLoreAdamW([group], lr=LRS[0], betas=BETAS, eps=CASE_EPS.get(name, EPS), weight_decay=wd)
        tensors[f"{name}.param.0"] = p.detach().clone()
        # Gradients with a dominant low-rank part (as real ones) plus noise, different at every step.
        for k in range(1, STEPS + 1):
            g = torch.randn(shape) * 0.1
            if len(shape) == 2:
                g += torch.randn(shape[0], 2) @ torch.randn(2, shape[1])
            p.grad = g
            for pg in opt.param_groups:
                pg["lr"] = LRS[k - 1]
            opt.step()
            tensors[f"{name}.grad.{k}"] = g.clone()
            tensors[f"{name}.param.{k}"] = p.detach().clone()
        meta.append({"name": name, "galore": galore, "weight_decay": wd, "eps": CASE_EPS.get(name, EPS)})
    out = os.path.join(os.path.dirname(os.path.abspath(__file__)), "galore_golden.safetensors")
    save_file(tensors, out, metadata={"cases": json.dumps(meta), "betas": json.dumps(BETAS), "eps": str(EPS),
                                      "steps": str(STEPS)})
    print(f"wrote {out}: {len(CASES)} cases x {STEPS} steps")


if __name__ == "__main__":
    main()
