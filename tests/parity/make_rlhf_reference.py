"""Reference for swift rlhf's losses and metrics: the trainers' own code on a fixed batch of a tiny model.

Usage: make_rlhf_reference.py OUT_DIR. Writes OUT_DIR/policy/ and OUT_DIR/reference/ (tiny random Qwen3 models,
saved by transformers), OUT_DIR/batch.safetensors (input_ids, labels, attention_mask: [2B, T], chosen rows first,
right-padded, as ms-swift's collator builds them) and OUT_DIR/manifest.json: for each case its settings and the
loss and metrics the reference computed. tests/rlhf/preference_parity_test.cpp recomputes them with swift.

What computes each case (fp32, CPU):
  dpo          ms-swift's DPOTrainer.get_batch_loss_metrics (it overrides TRL's DPO loss; swift follows ms-swift),
               its concatenated_forward and reference pass on the loaded reference model
  cpo, simpo   TRL's CPOTrainer.get_batch_loss_metrics (trl.experimental.cpo) under ms-swift's RLHFTrainerMixin
  kto          ms-swift's KTOTrainer.forward (its log-probabilities) with TRL's KTO loss, metrics and log averaging
  rm           ms-swift's RewardTrainer.compute_loss on transformers' Qwen3ForSequenceClassification (OUT_DIR/reward)
  orpo         TRL's ORPOTrainer.get_batch_loss_metrics likewise (ms-swift scores its NLL on the reply tokens only,
               where TRL alone would score the prompt too)
The trainers' methods run on a stand-in `self` holding only the attributes they read, so no Trainer, dataset or
accelerator is built.
"""
import inspect
import json
import os
import sys
import types
import warnings

os.environ.setdefault("TRL_EXPERIMENTAL_SILENCE", "1")
warnings.filterwarnings("ignore")

import torch
import transformers
from safetensors.torch import save_file

VOCAB = 96
PAD = 0
CONFIG = dict(vocab_size=VOCAB, hidden_size=32, intermediate_size=48, num_hidden_layers=2, num_attention_heads=4,
              num_key_value_heads=2, head_dim=8, max_position_embeddings=64, tie_word_embeddings=False,
              pad_token_id=PAD, eos_token_id=1, bos_token_id=1)


def tiny_model(seed):
    torch.manual_seed(seed)
    model = transformers.Qwen3ForCausalLM(transformers.Qwen3Config(**CONFIG))
    g = torch.Generator().manual_seed(seed)
    with torch.no_grad():  # larger than HF's init, so log-probabilities differ visibly between the two models
        for name, p in model.named_parameters():
            p.copy_(1 + 0.1 * torch.randn(p.shape, generator=g) if "norm" in name else 0.2 * torch.randn(p.shape, generator=g))
    return model.eval()


def make_side(g, prompt_len, completion_len):
    ids = torch.randint(2, VOCAB, (prompt_len + completion_len,), generator=g)
    labels = ids.clone()
    labels[:prompt_len] = -100
    return ids, labels


def make_pairs(seed):
    """Three pairs of prompt + reply; chosen and rejected of a pair share the prompt, lengths differ."""
    g = torch.Generator().manual_seed(seed)
    shapes = [(5, 4, 7), (3, 6, 2), (8, 3, 5)]  # prompt, chosen reply, rejected reply
    pairs = []
    for p, c, r in shapes:
        prompt = torch.randint(2, VOCAB, (p,), generator=g)
        chosen = torch.cat([prompt, torch.randint(2, VOCAB, (c,), generator=g)])
        rejected = torch.cat([prompt, torch.randint(2, VOCAB, (r,), generator=g)])
        pairs.append((p, chosen, rejected))
    return pairs


def pad(rows, value, length):
    return torch.stack([torch.cat([r, torch.full((length - len(r),), value, dtype=r.dtype)]) for r in rows])


def side_tensors(pairs, which, length=None):
    ids = [pair[1 if which == "chosen" else 2] for pair in pairs]
    labels = []
    for (p, _, _), row in zip(pairs, ids):
        lab = row.clone()
        lab[:p] = -100
        labels.append(lab)
    length = length or max(len(r) for r in ids)
    return (pad(ids, PAD, length), pad(labels, -100, length),
            pad([torch.ones(len(r), dtype=torch.long) for r in ids], 0, length))


class Accelerator:
    device = torch.device("cpu")

    @staticmethod
    def gather_for_metrics(x):
        return x


def swift_stand_in(trainer_cls, methods, reference):
    """A stand-in `self` for an ms-swift trainer: `methods` taken from trainer_cls (static ones stay static), the
    mixin's per-token log-probabilities, and the attributes every trainer reads."""
    from swift.rlhf_trainers.rlhf_mixin import RLHFTrainerMixin

    class Self:
        pass

    for name in methods:
        setattr(Self, name, inspect.getattr_static(trainer_cls, name))
    Self.get_per_token_logps = RLHFTrainerMixin.get_per_token_logps
    # logits_to_keep only skips positions before the first label; every value below is the same without it.
    Self.get_use_logits_to_keep = lambda self, default_value=True: False
    s = Self()
    s.template = types.SimpleNamespace(padding_free=False, sequence_parallel_size=1)
    s.is_encoder_decoder = False
    s.label_pad_token_id = -100
    s.aux_loss_enabled = False
    s.accelerator = Accelerator()
    s.ref_model = reference
    return s


def swift_dpo(policy, reference, batch, settings):
    """ms-swift's DPOTrainer on a stand-in self."""
    from swift.rlhf_trainers.dpo_trainer import DPOTrainer

    s = swift_stand_in(DPOTrainer, ("get_batch_loss_metrics", "concatenated_forward", "compute_ref_log_probs",
                                    "dpo_loss", "_get_ipo_sequence_logps"), reference)
    s._peft_has_been_casted_to_bf16 = False
    s.loss_type = settings["loss_type"]
    s.loss_weights = None
    s.use_weighting = False
    s.beta = settings["beta"]
    s.label_smoothing = settings.get("label_smoothing", 0.0)
    s.reference_free = False
    s.f_divergence_type = "reverse_kl"
    s.f_divergence_params = {}
    s.args = types.SimpleNamespace(ld_alpha=None, rpo_alpha=settings.get("rpo_alpha"),
                                   discopop_tau=settings.get("discopop_tau", 0.05))
    loss, metrics = s.get_batch_loss_metrics(policy, dict(batch), "train")
    return loss.item(), metrics


def swift_pairwise(trainer_cls, policy, batch, settings):
    """ms-swift's CPO/ORPO: TRL's trainer under ms-swift's RLHFTrainerMixin (which feeds TRL its own concatenated
    batch and, for ORPO, scores the NLL on the labels only), on a stand-in self."""
    from swift.rlhf_trainers.rlhf_mixin import RLHFTrainerMixin

    trl_methods = {name: inspect.getattr_static(trainer_cls, name)
                   for name in ("get_batch_loss_metrics", "concatenated_forward", "concatenated_inputs",
                                "get_batch_logps", "cpo_loss", "odds_ratio_loss") if hasattr(trainer_cls, name)}
    trl_part = type("TrlPart", (), trl_methods)
    # ms-swift checks the class name to tell ORPO apart.
    stand_in = type(trainer_cls.__name__, (RLHFTrainerMixin, trl_part),
                    {"concatenated_forward": RLHFTrainerMixin.concatenated_forward})
    s = object.__new__(stand_in)
    s.is_encoder_decoder = False
    s.label_pad_token_id = -100
    s.padding_value = PAD
    s.pad_token_id = PAD
    s.aux_loss_enabled = False
    s.accelerator = Accelerator()
    s.beta = settings["beta"]
    s.label_smoothing = settings.get("label_smoothing", 0.0)
    s.loss_type = settings.get("loss_type", "sigmoid")
    s.simpo_gamma = settings.get("simpo_gamma", 1.0)
    s.cpo_alpha = settings.get("cpo_alpha", 1.0)
    s.alpha = 0.0
    out = s.get_batch_loss_metrics(policy, dict(batch), "train")
    loss, metrics = out[0], out[1]
    return loss.item(), {k: float(v) for k, v in metrics.items()}


def swift_kto(policy, reference, batch, labels, settings):
    """ms-swift's KTOTrainer (its forward and log-probabilities) with TRL's loss and metrics, on a stand-in self.
    The replies are the batch's first half, their KL rows the second half; returns TRL's logged values."""
    from swift.rlhf_trainers.kto_trainer import KTOTrainer

    s = swift_stand_in(KTOTrainer, ("forward", "_compute_kl_logps", "_get_model_kwargs", "get_batch_logps",
                                    "get_batch_loss_metrics", "kto_loss"), reference)
    s.calculate_KL = settings.get("loss_type", "kto") == "kto"
    s.loss_type = settings.get("loss_type", "kto")
    s.beta = settings["beta"]
    s.desirable_weight = settings.get("desirable_weight", 1.0)
    s.undesirable_weight = settings.get("undesirable_weight", 1.0)
    s.args = types.SimpleNamespace(use_liger_kernel=False, gradient_checkpointing_kwargs=None,
                                   gradient_checkpointing=False)
    B = batch["input_ids"].shape[0] // 2
    kto_batch = {"label": labels}
    for prefix, rows in (("completion_", slice(0, B)), ("KL_completion_", slice(B, 2 * B))):
        for key in ("input_ids", "attention_mask", "labels"):
            kto_batch[prefix + key] = batch[key][rows]
    loss, metrics = s.get_batch_loss_metrics(policy, kto_batch)
    logs = {"kl": metrics["kl"]}  # TRL's log(): sums over counts, margins
    for split in ("chosen", "rejected"):
        for metric in ("rewards", "logps", "logits"):
            logs[f"{metric}/{split}"] = metrics[f"{metric}/{split}_sum"] / metrics[f"count/{split}"]
    logs["rewards/margins"] = logs["rewards/chosen"] - logs["rewards/rejected"]
    return loss.item(), logs


def swift_rm(reward_model, batch, settings):
    """ms-swift's RewardTrainer.compute_loss on a stand-in self, with transformers' Qwen3ForSequenceClassification
    (the score at each row's last non-pad token)."""
    from collections import defaultdict
    from swift.rlhf_trainers.reward_trainer import RewardTrainer

    class Mean:
        def __init__(self):
            self.values = []

        def update(self, v):
            self.values.append(float(v))

    class Self:
        pass

    Self.compute_loss = inspect.getattr_static(RewardTrainer, "compute_loss")
    s = Self()
    s.model = reward_model
    s.custom_metrics = {"train": defaultdict(Mean), "eval": defaultdict(Mean)}
    s.model_accepts_loss_kwargs = False
    s.args = types.SimpleNamespace(center_rewards_coefficient=settings.get("center_rewards_coefficient"),
                                   gradient_accumulation_steps=1)
    inputs = {"input_ids": batch["input_ids"], "attention_mask": batch["attention_mask"]}
    if "margins" in settings:
        inputs["margin"] = torch.tensor(settings["margins"])
    loss = s.compute_loss(reward_model, inputs)
    mode = "train" if reward_model.training else "eval"
    return loss.item(), {k: m.values[-1] for k, m in s.custom_metrics[mode].items()}


CASES = {
    "dpo_sigmoid": ("dpo", dict(loss_type="sigmoid", beta=0.1)),
    "dpo_sigmoid_smoothed_rpo": ("dpo", dict(loss_type="sigmoid", beta=0.5, label_smoothing=0.2, rpo_alpha=0.7)),
    "dpo_hinge": ("dpo", dict(loss_type="hinge", beta=0.1)),
    "dpo_ipo": ("dpo", dict(loss_type="ipo", beta=0.3)),
    "dpo_robust": ("dpo", dict(loss_type="robust", beta=0.2, label_smoothing=0.1)),
    "dpo_exo_pair": ("dpo", dict(loss_type="exo_pair", beta=0.1)),
    "dpo_sppo_hard": ("dpo", dict(loss_type="sppo_hard", beta=0.1)),
    "dpo_nca_pair": ("dpo", dict(loss_type="nca_pair", beta=0.1)),
    "dpo_aot": ("dpo", dict(loss_type="aot", beta=0.1, label_smoothing=0.1)),
    "dpo_aot_unpaired": ("dpo", dict(loss_type="aot_unpaired", beta=0.1)),
    "dpo_apo_zero": ("dpo", dict(loss_type="apo_zero", beta=0.1)),
    "dpo_apo_down": ("dpo", dict(loss_type="apo_down", beta=0.1)),
    "dpo_discopop": ("dpo", dict(loss_type="discopop", beta=0.1, discopop_tau=0.3)),
    "cpo_sigmoid": ("cpo", dict(loss_type="sigmoid", beta=0.1, cpo_alpha=1.0)),
    "cpo_hinge": ("cpo", dict(loss_type="hinge", beta=0.1, cpo_alpha=0.5)),
    "cpo_ipo": ("cpo", dict(loss_type="ipo", beta=0.1, cpo_alpha=1.0)),
    "simpo": ("cpo", dict(loss_type="simpo", beta=2.0, simpo_gamma=1.0, cpo_alpha=1.0)),
    "simpo_pure": ("cpo", dict(loss_type="simpo", beta=2.0, simpo_gamma=0.5, cpo_alpha=0.0, label_smoothing=0.1)),
    "orpo": ("orpo", dict(beta=0.1)),
    "kto": ("kto", dict(beta=0.1)),
    "kto_weighted": ("kto", dict(beta=0.5, desirable_weight=1.5, undesirable_weight=0.7)),
    "kto_apo_zero_unpaired": ("kto", dict(beta=0.2, loss_type="apo_zero_unpaired")),
    # The two models' roles swapped: the KL estimate is then positive rather than clamped to 0.
    "kto_swapped": ("kto", dict(beta=0.1, swap_models=True)),
    "rm": ("rm", dict()),
    "rm_margin_center": ("rm", dict(margins=[0.5, -0.25, 1.0], center_rewards_coefficient=0.01)),
}
KTO_LABELS = [True, False, True]  # the batch's chosen rows as labelled replies, its rejected rows as their KL rows


def main(out_dir):
    from trl.experimental.cpo import CPOTrainer
    from trl.experimental.orpo import ORPOTrainer
    import trl

    os.makedirs(out_dir, exist_ok=True)
    policy, reference = tiny_model(1), tiny_model(2)
    policy.save_pretrained(os.path.join(out_dir, "policy"), safe_serialization=True)
    reference.save_pretrained(os.path.join(out_dir, "reference"), safe_serialization=True)
    torch.manual_seed(4)
    reward_model = transformers.Qwen3ForSequenceClassification(transformers.Qwen3Config(**CONFIG, num_labels=1))
    with torch.no_grad():
        g = torch.Generator().manual_seed(4)
        for name, p in reward_model.named_parameters():
            p.copy_(1 + 0.1 * torch.randn(p.shape, generator=g) if "norm" in name else 0.2 * torch.randn(p.shape, generator=g))
    reward_model.eval()
    reward_model.save_pretrained(os.path.join(out_dir, "reward"), safe_serialization=True)
    pairs = make_pairs(3)
    length = max(max(len(c), len(r)) for _, c, r in pairs)
    c_ids, c_labels, c_mask = side_tensors(pairs, "chosen", length)
    r_ids, r_labels, r_mask = side_tensors(pairs, "rejected", length)
    batch = {"input_ids": torch.cat([c_ids, r_ids]), "labels": torch.cat([c_labels, r_labels]),
             "attention_mask": torch.cat([c_mask, r_mask])}
    save_file({k: v.contiguous() for k, v in batch.items()}, os.path.join(out_dir, "batch.safetensors"))

    import swift
    manifest = {"transformers": transformers.__version__, "trl": trl.__version__,
                "ms_swift": getattr(swift, "__version__", "?"), "cases": {}}
    with torch.no_grad():
        for name, (method, settings) in CASES.items():
            if method == "dpo":
                loss, metrics = swift_dpo(policy, reference, batch, settings)
            elif method == "rm":
                loss, metrics = swift_rm(reward_model, batch, settings)
            elif method == "kto":
                pair = (reference, policy) if settings.get("swap_models") else (policy, reference)
                loss, metrics = swift_kto(*pair, batch, KTO_LABELS, settings)
            else:
                loss, metrics = swift_pairwise(CPOTrainer if method == "cpo" else ORPOTrainer, policy, batch, settings)
            manifest["cases"][name] = {"method": method, "settings": settings, "loss": loss,
                                       "metrics": {k.replace("train_", ""): v for k, v in metrics.items()}}
            if method == "kto":
                manifest["cases"][name]["labels"] = [int(x) for x in KTO_LABELS]
    with open(os.path.join(out_dir, "manifest.json"), "w") as f:
        json.dump(manifest, f, indent=2)
    print(f"wrote {len(manifest['cases'])} preference-loss references to {out_dir} (ms-swift "
          f"{manifest['ms_swift']}, TRL {manifest['trl']})")


if __name__ == "__main__":
    main(sys.argv[1])
