#!/usr/bin/env bash
# End-to-end: two "nodes" on one machine, each a network namespace joined to the other by a veth pair (made here,
# removed at the end), train together over real TCP: NNODES=2, NPROC_PER_NODE=2, tensor parallelism within each
# node (--tp_size 2) and data parallelism across them, then a pipeline stage on each node (--tp_size 2 --pp_size 2),
# started by swift's launcher on each node as Slurm or a user would. Each run equals one rank (losses, grad norms,
# final weights to 1e-5), and the data-parallel traffic crossed the veth link.
# Needs root and iproute2 (`ip netns`); otherwise the suite reports SKIPPED. Usage: two_nodes_test.sh path/to/swift
set -uo pipefail
SWIFT="$(cd "$(dirname "$1")" && pwd)/$(basename "$1")"
source "$(dirname "${BASH_SOURCE[0]}")/common.sh"
need_python json numpy safetensors
source "$(dirname "${BASH_SOURCE[0]}")/model_parallel_checks.sh"
[ "$(id -u)" = 0 ] || skip_suite "network namespaces need root"
command -v ip >/dev/null || skip_suite "no iproute2 (ip)"
N0="swift-n0-$$" N1="swift-n1-$$"
cleanup() { ip netns del "$N0" 2>/dev/null; ip netns del "$N1" 2>/dev/null; rm -rf "$TMP"; }
trap cleanup EXIT
ip netns add "$N0" && ip netns add "$N1" || skip_suite "cannot create network namespaces here"
ip link add v0 netns "$N0" type veth peer name v1 netns "$N1"
ip -n "$N0" addr add 10.77.0.1/24 dev v0 && ip -n "$N1" addr add 10.77.0.2/24 dev v1
for ns in "$N0" "$N1"; do ip -n "$ns" link set lo up; done
ip -n "$N0" link set v0 up && ip -n "$N1" link set v1 up

"$SWIFT" export --model "$ROOT/configs/models/qwen3-tiny" --init_strategy normal --seed 5 --output_dir "$TMP/m" \
  >/dev/null 2>&1 || { echo "FAIL export"; exit 1; }
flags=(--model "$TMP/m" --dataset swift/self-cognition#40 --model_name Tiny Tests --model_author Tests Tests
       --train_type full --max_steps 4 --gradient_accumulation_steps 2 --learning_rate 1e-3 --logging_steps 1
       --save_steps 4 --add_version false --num_threads 1 --seed 1 --adam_epsilon 1e-6 --max_grad_norm 1.0)
run one_rank 0 "$SWIFT" sft "${flags[@]}" --per_device_train_batch_size 2 --output_dir "$TMP/one"

# Node 0 hosts the rendezvous (MASTER_ADDR on its veth); each node's Gloo binds to its veth (GLOO_SOCKET_IFNAME).
node() {  # node INDEX NAMESPACE IFNAME OUTPUT_DIR SWIFT_FLAGS...
  local index="$1" ns="$2" ifname="$3" out="$4"; shift 4
  ip netns exec "$ns" env NNODES=2 NODE_RANK="$index" NPROC_PER_NODE=2 MASTER_ADDR=10.77.0.1 MASTER_PORT=29517 \
    GLOO_SOCKET_IFNAME="$ifname" "$SWIFT" sft "${flags[@]}" "$@" --output_dir "$out" >"$TMP/node$index.out" 2>"$TMP/node$index.err"
}
two_nodes() {  # two_nodes NAME OUTPUT_DIR SWIFT_FLAGS...: both nodes' launchers, each with 2 ranks
  local name="$1" out="$2"; shift 2
  node 0 "$N0" v0 "$out" "$@" & local p0=$!
  node 1 "$N1" v1 "$out" "$@" & local p1=$!
  wait "$p0"; local r0=$?
  wait "$p1"; local r1=$?
  [ "$r0" = 0 ] && [ "$r1" = 0 ] && ok || { bad "$name: rc $r0 / $r1"; tail -n 5 "$TMP/node0.err" "$TMP/node1.err"; }
}
# TP2 within each node, DP2 across them.
two_nodes tp_dp "$TMP/two_nodes" --per_device_train_batch_size 1 --tp_size 2
grep -q "model parallel: tp 2 x pp 1 x dp 2" "$TMP/node0.err" && ok || bad "no TP2 x DP2 layout"
compare two_nodes "$TMP/one" "$TMP/two_nodes"
# The data-parallel gradients crossed the veth link (a step's all-reduce of a 150k-token embedding half is MBs).
tx="$(ip -n "$N0" -s -j link show v0 | "$PY" -c 'import json,sys; print(json.load(sys.stdin)[0]["stats64"]["tx"]["bytes"])')"
[ "${tx:-0}" -gt 1000000 ] && ok || bad "only ${tx:-0} bytes left node 0 over its veth"
echo "node 0 sent $tx bytes over its veth"

# TP2 within each node, the two pipeline stages on the two nodes (PP is the outermost split): the activations and
# their gradients cross the link.
two_nodes tp_pp "$TMP/two_nodes_pp" --per_device_train_batch_size 2 --tp_size 2 --pp_size 2
grep -q "model parallel: tp 2 x pp 2 x dp 1" "$TMP/node0.err" && ok || bad "no TP2 x PP2 layout"
compare two_nodes_pipeline "$TMP/one" "$TMP/two_nodes_pp"

finish two_nodes
