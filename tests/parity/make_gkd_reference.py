"""Reference for swift rlhf --rlhf_type gkd's loss: ms-swift 4.6's gkd_loss (as GKDTrainer._compute_jsd_loss calls
it) and TRL's GKDTrainer.generalized_jsd_loss on the same fixed logits.

Usage: make_gkd_reference.py OUT_DIR. Writes OUT_DIR/batch.safetensors (student and teacher logits [B, T, V] and
labels [B, T], -100 off the completion, unshifted as the trainer holds them) and OUT_DIR/manifest.json: for each
(beta, temperature) case ms-swift's loss (the JSD summed over the completion tokens / their count), TRL's, and the
gradient of ms-swift's loss with respect to the student logits (in the batch file as grad_<i>).
tests/rlhf/gkd_parity_test.cpp recomputes them with swift.
"""
import json
import sys
import warnings

warnings.filterwarnings("ignore")

import torch
from safetensors.torch import save_file


def main(out):
    import os
    os.makedirs(out, exist_ok=True)
    from swift.rlhf_trainers.gkd_loss import TeacherOutput, gkd_loss
    from trl.experimental.gkd.gkd_trainer import GKDTrainer
    g = torch.Generator().manual_seed(11)
    B, T, V = 3, 9, 40
    student = torch.randn(B, T, V, generator=g) * 2
    teacher = torch.randn(B, T, V, generator=g) * 2
    labels = torch.randint(0, V, (B, T), generator=g)
    labels[:, :3] = -100      # the prompt
    labels[1, 7:] = -100      # a shorter completion (right padding)
    labels[2, 3] = -100       # a masked token inside a completion
    tensors = {"student": student, "teacher": teacher, "labels": labels}
    cases = []
    for beta in (0.0, 0.1, 0.5, 1.0):
        for temperature in (1.0, 0.9):
            logits = student.clone().requires_grad_(True)
            # ms-swift: _compute_jsd_loss rolls the labels left (position t scores token t + 1).
            shifted = torch.roll(labels, shifts=-1, dims=1)
            total, num_valid = gkd_loss(logits, TeacherOutput(full_logits=teacher, labels=shifted.clone()), shifted,
                                        beta, temperature)
            loss = total / num_valid
            loss.backward()
            trl = GKDTrainer.generalized_jsd_loss(student, teacher, labels=shifted, beta=beta, temperature=temperature)
            tensors[f"grad_{len(cases)}"] = logits.grad.clone()
            cases.append(dict(beta=beta, temperature=temperature, loss=loss.item(), trl_loss=trl.item(),
                              tokens=int(num_valid)))
    save_file(tensors, f"{out}/batch.safetensors")
    json.dump(dict(cases=cases), open(f"{out}/manifest.json", "w"), indent=1)


if __name__ == "__main__":
    main(sys.argv[1])
