"""Megatron-Core's router arithmetic on given router logits, for tests/model/moe_test.cpp.

Usage: megatron_router_reference.py logits.safetensors top_k capacity_factors drop_policy out.json

Reads layer.0, layer.1, ... ([tokens, experts] float32 router logits) and writes a list with one entry per capacity
factor (comma-separated), each {"layers": [...]} holding for each layer
  load_balancing_loss: switch_load_balancing_loss_func with a coefficient of 1, as TopKRouter._apply_aux_loss calls it
                       on one rank (softmax scores in float32, the top-k routing map of those scores);
  kept:                the routing map after apply_router_token_dropping ([tokens][experts] 0/1), for the
                       normalised top-k routing of Qwen3-MoE (softmax over the k largest logits).
Exit 77 when megatron.core cannot be imported (scripts/setup.sh --tests installs it).
"""
import json
import sys

try:
    import torch
    from megatron.core.transformer.moe import moe_utils
    from safetensors.torch import load_file
except ImportError as error:  # reported as a missing reference by the caller
    print(f"cannot import the reference: {error}", file=sys.stderr)
    sys.exit(77)


def main():
    path, top_k, factors, policy, out = sys.argv[1], int(sys.argv[2]), sys.argv[3], sys.argv[4], sys.argv[5]
    tensors = load_file(path)
    json.dump([{"layers": layers(tensors, top_k, float(f), policy)} for f in factors.split(",")], open(out, "w"))


def layers(tensors, top_k, factor, policy):
    found = []
    for i in range(len(tensors)):
        logits = tensors[f"layer.{i}"]
        tokens, experts = logits.shape
        routing_map, scores = moe_utils.compute_routing_scores_for_aux_loss(logits, top_k, "softmax")
        aux = moe_utils.switch_load_balancing_loss_func(
            probs=scores, tokens_per_expert=routing_map.sum(dim=0), total_num_tokens=tokens, topk=top_k,
            num_experts=experts, moe_aux_loss_coeff=1.0)
        probs, chosen = moe_utils.topk_routing_with_score_function(logits, top_k, use_pre_softmax=False)
        _, kept = moe_utils.apply_router_token_dropping(probs, chosen, router_topk=top_k, capacity_factor=factor,
                                                         drop_policy=policy)
        found.append({"load_balancing_loss": float(aux), "kept": kept.int().tolist(), "chosen": chosen.int().tolist()})
    return found


if __name__ == "__main__":
    main()
