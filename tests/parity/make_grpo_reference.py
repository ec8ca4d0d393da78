"""Reference for swift rlhf --rlhf_type grpo's loss and advantages: ms-swift 4.6's own code on fixed inputs.

Usage: make_grpo_reference.py OUT_DIR. Writes OUT_DIR/policy/ and OUT_DIR/reference/ (tiny random Qwen3 models,
saved by transformers), OUT_DIR/batch.safetensors and OUT_DIR/manifest.json. tests/rlhf/grpo_parity_test.cpp
recomputes everything with swift.

- The batch: four prompt + completion rows, right-padded (input_ids, attention_mask, labels -100 on the prompt and
  the pads), the "old" log-probabilities of the completion tokens (the policy's own, moved by seeded noise so that
  the clip bites), each row's advantage, and the reference model's log-probabilities. old_logps and ref_logps are
  in swift's layout: [B, T - 1], position t scoring input_ids[t + 1], 0 off the completion.
- Loss cases: ms-swift's GRPOTrainer._compute_loss_and_metrics on a stand-in `self` (the attributes it reads) for
  every loss type, importance-sampling level, delta, beta 0 and the overlong filter; each case's loss, metrics and
  the policy's gradients (the loss as the trainer backpropagates it: dapo/cispo divided by the tokens).
- Advantage cases: rl_core.advantage.compute_advantages and compute_reward_metrics on a reward matrix with a
  missing (NaN) reward, a group of equal rewards, for each estimator and scaling.
- KL-in-reward cases (--kl_in_reward): the same with beta x a KL per completion taken out of the rewards.
"""
import json
import os
import sys
import types
import warnings

warnings.filterwarnings("ignore")

import torch
import transformers
from safetensors.torch import save_file

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from make_rlhf_reference import VOCAB, tiny_model  # the same tiny Qwen3 models as the preference reference

TEMPERATURE = 0.9


def make_batch(seed):
    """Four rows of prompt + completion, right-padded; the last completion is the longest (truncated)."""
    g = torch.Generator().manual_seed(seed)
    shapes = [(4, 5), (6, 3), (3, 7), (5, 8)]  # prompt, completion
    T = max(p + c for p, c in shapes)
    input_ids = torch.zeros(len(shapes), T, dtype=torch.long)
    labels = torch.full((len(shapes), T), -100, dtype=torch.long)
    attention_mask = torch.zeros(len(shapes), T, dtype=torch.long)
    for b, (p, c) in enumerate(shapes):
        ids = torch.randint(2, VOCAB, (p + c,), generator=g)
        input_ids[b, :p + c] = ids
        labels[b, p:p + c] = ids[p:]
        attention_mask[b, :p + c] = 1
    return input_ids, labels, attention_mask


def stand_in(loss_type, level, beta, delta, overlong_filter, max_completion_length):
    from swift.rlhf_trainers.grpo_trainer import GRPOTrainer

    class Self:
        pass

    for name in ("_compute_loss_and_metrics", "_get_per_token_logps_and_entropies",
                 "_get_per_token_logps_and_entropies_single", "_get_logps_via_local_forward",
                 "_undo_gradient_accumulation_scaling"):
        fn = GRPOTrainer.__dict__[name]
        setattr(Self, name, getattr(fn, "__wrapped__", fn))
    s = Self()
    s.model = types.SimpleNamespace(training=True)
    s.args = types.SimpleNamespace(log_entropy=False, top_entropy_quantile=1.0, delta=delta,
                                   per_device_train_batch_size=4, gradient_accumulation_steps=1)
    s.compute_entropy = False
    s.top_entropy_quantile = 1.0
    s.overlong_filter = overlong_filter
    s.beta = beta
    s.kl_in_reward = False
    s.rollout_importance_sampling_mode = None
    s.log_rollout_offpolicy_metrics = False
    s.disable_rollout_importance_sampling = True
    s.importance_sampling_level = level
    s._has_teacher = False
    s.loss_type = loss_type
    s.epsilon_low, s.epsilon_high = 0.2, 0.28
    s.tau_pos, s.tau_neg = 1.0, 1.05
    s.off_policy_sequence_mask_delta = None
    s.max_completion_length = max_completion_length
    s.sdar_loss_coef = 0.0
    s.chord_sft_iterator = None
    s.template = types.SimpleNamespace(padding_free=False, sequence_parallel_size=1)
    s.model_kwarg_keys = ["input_ids", "attention_mask", "logits_to_keep", "use_cache"]
    s.temperature = TEMPERATURE
    s.dynamic_num_samples = False
    s.model_accepts_loss_kwargs = False
    s.compute_loss_func = None
    s.current_gradient_accumulation_steps = 1
    s.accelerator = types.SimpleNamespace(num_processes=1, gather_for_metrics=lambda x: x)
    return s


# Completions and solutions for the built-in reward functions: the answers arithmetic and math sets give (numbers,
# fractions, decimals, percentages, thousands separators, boxed, tagged or stated), formats right and wrong,
# repetitive and varied text.
REWARD_CORPUS = [
    ("<think>6 times 7</think><answer>42</answer>", "42"),
    ("<think>\nadd them\n</think>\n<answer>3/4</answer>", "\\frac{3}{4}"),
    ("<answer>0.75</answer>", "The result is \\boxed{\\frac{3}{4}}."),
    ("<answer>-7</answer>", "$-7$"),
    ("so the total is \\boxed{12}", "We get 6*2 = 12, so the answer is \\boxed{12}"),
    ("The answer is 42", "42"),
    ("The final answer is $42$", "42"),
    ("<answer>x = 5</answer>", "5"),
    ("<answer>5 apples</answer>", "5"),
    ("<answer>1,000</answer>", "1000"),
    ("<answer>43</answer>", "42"),
    ("<answer></answer>", "42"),
    ("<answer>42.0</answer>", "3 + 39 = 42"),
    ("<answer>50%</answer>", "\\boxed{50\\%}"),
    ("<answer>0.5</answer>", "\\boxed{50\\%}"),
    ("<answer>3</answer>", "no number here"),
    ("<think>x</think> <answer>-\\frac{3}{4}</answer>", "\\boxed{-\\frac{3}{4}}"),
    ("<think>a</think><answer>b</answer> trailing", "7"),
    ("<answer>7</answer>", "<answer>7</answer>"),
    ("the the the the the the cat sat on the mat the the the", "1"),
    ("One two three four five six seven eight nine ten", "2"),
    ("One two", "2"),
    ("", "2"),
    ("<answer>50</answer>", "\\boxed{50\\%}"),
    ("<answer>5%</answer>", "5"),
    ("<answer>50\\%</answer>", "0.5"),
    ("<answer>20000000000000</answer>", "30000000000000"),
    ("so \\boxed{(\\text{A})}", "\\boxed{(\\text{C})}"),
    ("so \\boxed{(\\text{A})}", "\\boxed{(\\text{A})}"),
    ("<answer>3.141593</answer>", "3.14159265"),
    ("<answer>3.14159</answer>", "3.14159265"),
    ("<answer>100.0000001</answer>", "100"),
    ("<answer>1/3</answer>", "0.333333"),
    ("<answer>5 cm</answer>", "\\boxed{5\\text{ cm}}"),
    ("<think>long</think><answer>" + "9" * 400 + "</answer>", "9"),
    ("\u00c9T\u00c9 \u00e9t\u00e9 \u00c9T\u00c9 \u00e9t\u00e9 \u00c9T\u00c9 \u00e9t\u00e9", "1"),
]


def builtin_reward_cases():
    """ms-swift's built-ins on the corpus; cosine and soft_overlong with a token count per completion."""
    from swift.rewards.orm import CosineReward, Format, MathAccuracy, RepetitionPenalty, SoftOverlong
    args = types.SimpleNamespace(cosine_min_len_value_wrong=-0.5, cosine_max_len_value_wrong=0.0,
                                 cosine_min_len_value_correct=1.0, cosine_max_len_value_correct=0.5, cosine_max_len=20,
                                 repetition_n_grams=3, repetition_max_penalty=-1.0, soft_max_length=20,
                                 soft_cache_length=8)
    completions = [c for c, _ in REWARD_CORPUS]
    solutions = [s for _, s in REWARD_CORPUS]
    tokens = [[0] * (3 * i % 23) for i in range(len(completions))]
    return dict(completions=completions, solutions=solutions, tokens=[len(t) for t in tokens],
                settings=dict(cosine_max_len=20, soft_max_length=20, soft_cache_length=8),
                accuracy=MathAccuracy()(completions, solutions), format=Format()(completions),
                cosine=CosineReward(args)(completions, solutions, response_token_ids=tokens),
                repetition=RepetitionPenalty(args)(completions),
                soft_overlong=SoftOverlong(args)(completions, response_token_ids=tokens))


def main(out):
    os.makedirs(out, exist_ok=True)
    policy, reference = tiny_model(3), tiny_model(4)
    policy.save_pretrained(f"{out}/policy")
    reference.save_pretrained(f"{out}/reference")
    input_ids, labels, attention_mask = make_batch(5)
    B, T = input_ids.shape

    # ms-swift's layout: the last L positions, L = the longest completion counted from its first label.
    first_label = (labels != -100).float().argmax(1)
    L = int((T - first_label).max())
    completion_mask = labels[:, -L:] != -100
    truncated = torch.tensor([False, False, False, True])

    def logps_of(model):  # ms-swift's own scoring of the completion tokens at the temperature
        s = stand_in("grpo", "token", 0.0, None, False, 8)
        with torch.no_grad():
            batch = types.SimpleNamespace(logits_to_keep=L, seq_lengths=torch.full((B,), T))
            return s._get_per_token_logps_and_entropies(model, {"input_ids": input_ids, "attention_mask": attention_mask},
                                                        batch)[0]

    g = torch.Generator().manual_seed(6)
    own = logps_of(policy)
    # Off-policy enough that both clips bite, per token and per row (GSPO).
    old = own + 0.3 * torch.randn(own.shape, generator=g) + torch.tensor([[-0.35], [0.3], [0.0], [0.35]])
    ref = logps_of(reference)
    advantages = torch.tensor([1.2, -0.7, 0.4, -1.5])

    def swift_layout(x):  # [B, L] -> [B, T - 1], position t scoring input_ids[t + 1]
        full = torch.zeros(B, T - 1)
        full[:, T - 1 - L:] = x * completion_mask
        return full

    save_file({"input_ids": input_ids, "labels": labels, "attention_mask": attention_mask,
               "old_logps": swift_layout(old).contiguous(), "ref_logps": swift_layout(ref).contiguous(),
               "own_logps": swift_layout(own).contiguous(), "advantages": advantages, "truncated": truncated},
              f"{out}/batch.safetensors")

    from swift.rl_core.data import GRPOBatch
    cases = []
    settings = [("grpo", "token", 0.04, None, False), ("bnpo", "token", 0.04, None, False),
                ("dr_grpo", "token", 0.04, None, False), ("dapo", "token", 0.04, None, False),
                ("cispo", "token", 0.04, None, False), ("sapo", "token", 0.04, None, False),
                ("grpo", "sequence", 0.04, None, False), ("grpo", "sequence_token", 0.04, None, False),
                ("grpo", "token", 0.0, None, False), ("grpo", "token", 0.04, 1.1, False),
                ("grpo", "token", 0.04, None, True), ("dapo", "token", 0.1, None, True)]
    for loss_type, level, beta, delta, overlong in settings:
        s = stand_in(loss_type, level, beta, delta, overlong, max_completion_length=8)
        policy.zero_grad()
        tokens = completion_mask.sum()  # the generation batch's completion tokens (dapo's normaliser), unfiltered
        batch = GRPOBatch(completion_mask=completion_mask.clone(), truncated_mask=truncated,
                          seq_lengths=torch.full((B,), T), old_per_token_logps=old,
                          ref_per_token_logps=ref if beta != 0 else None,
                          advantages=advantages.unsqueeze(1).expand(B, L).clone(),
                          num_items_in_batch=tokens, logits_to_keep=L)
        loss, metrics = s._compute_loss_and_metrics(policy, {"input_ids": input_ids, "attention_mask": attention_mask}, batch)
        loss.backward()
        grads = {n: p.grad.clone() for n, p in policy.named_parameters() if p.grad is not None}
        name = f"{loss_type}_{level}_beta{beta}" + (f"_delta{delta}" if delta else "") + ("_overlong" if overlong else "")
        save_file(grads, f"{out}/grads_{name}.safetensors")
        logged = {}
        if "kl" in metrics:
            logged["kl"] = metrics["kl"]
        clip = metrics.get("clipping", {})
        for k, v in {"low_clip_mean": "clip_ratio/low_mean", "high_clip_mean": "clip_ratio/high_mean",
                     "region_clip_mean": "clip_ratio/region_mean", "cispo_clip_ratio": "cispo_clip_ratio"}.items():
            if k in clip:
                logged[v] = clip[k]
        cases.append(dict(name=name, loss_type=loss_type, importance_sampling_level=level, beta=beta, delta=delta,
                          overlong_filter=overlong, epsilon=0.2, epsilon_high=0.28, temperature=TEMPERATURE,
                          max_completion_length=8, loss=loss.item(), tokens=int(tokens), metrics=logged))

    # Advantages: 3 groups of 4 completions, 2 reward functions; a missing reward and a group of equal rewards.
    from swift.rl_core.advantage import compute_advantages, compute_reward_metrics
    g = torch.Generator().manual_seed(7)
    rewards = torch.randn(12, 2, generator=g)
    rewards[4:8, 0] = 1.0
    rewards[4:8, 1] = 0.5
    rewards[2, 1] = float("nan")
    weights = torch.tensor([1.0, 0.5])
    advantage_cases = []
    for estimator in ("grpo", "rloo", "reinforce_plus_plus"):
        for scaling in ("group", "batch", "none", "gdpo"):
            adv, total = compute_advantages(rewards, weights, 4, advantage_estimator=estimator, scale_rewards=scaling)
            m = compute_reward_metrics(total, rewards, ["MathAccuracy", "Format"], 4, scaling)
            logged = {"reward": m.reward_mean, "reward_std": m.reward_std, "frac_reward_zero_std": m.frac_reward_zero_std}
            for k, v in m.per_func_mean.items():
                logged[f"rewards/{k}/mean"] = v
            for k, v in m.per_func_std.items():
                logged[f"rewards/{k}/std"] = v
            advantage_cases.append(dict(estimator=estimator, scale_rewards=scaling, advantages=adv.tolist(),
                                        rewards=total.tolist(), metrics=logged))
    # --kl_in_reward: beta x each completion's KL (summed log-ratio) out of the rewards before the advantages, for the
    # estimators it is ms-swift's default for (and grpo's, asked for).
    kl_values = torch.rand(12, generator=g) * 3
    kl_cases = []
    for estimator, scaling in (("rloo", "none"), ("reinforce_plus_plus", "batch"), ("grpo", "group")):
        adv, total = compute_advantages(rewards, weights, 4, advantage_estimator=estimator, scale_rewards=scaling,
                                        kl_in_reward=True, beta=0.04, kl_values=kl_values)
        m = compute_reward_metrics(total, rewards, ["MathAccuracy", "Format"], 4, scaling)
        kl_cases.append(dict(estimator=estimator, scale_rewards=scaling, advantages=adv.tolist(), rewards=total.tolist(),
                             reward=m.reward_mean, reward_std=m.reward_std, kl=kl_values.nanmean().item()))
    reward_cases = builtin_reward_cases()
    missing_as_null = [[None if v != v else v for v in row] for row in rewards.tolist()]
    json.dump(dict(loss_cases=cases, advantage_cases=advantage_cases, reward_cases=reward_cases, rewards=missing_as_null,
                   reward_weights=weights.tolist(), num_generations=4, temperature=TEMPERATURE, kl_beta=0.04,
                   kl_values=kl_values.tolist(), kl_cases=kl_cases),
              open(f"{out}/manifest.json", "w"), indent=1)


if __name__ == "__main__":
    main(sys.argv[1])
