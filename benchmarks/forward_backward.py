"""Time forward+backward of mha_lib.MultiHeadAttention against
torch.nn.MultiheadAttention.

Same weights, same input, ``need_weights=False``, the two layers timed in
alternation so that drifts in machine load hit both alike (on a CPU, the CPU
time of one thread; on a GPU, the wall time); reports the median of many runs
and the time ratio.

    # batch 32, seq 128, d_model 256, 8 heads:
    python benchmarks/forward_backward.py
    python benchmarks/forward_backward.py --device cuda
"""

import argparse

import torch
from torch import nn

import mha_lib
from mha_lib.course.timing import summarize, time_interleaved


class SelfAttention(nn.Module):
    """Calls ``nn.MultiheadAttention`` as ``layer(x)``, like mha_lib's layer,
    without weights."""

    def __init__(self, layer):
        super().__init__()
        self.layer = layer

    def forward(self, x):
        return self.layer(x, x, x, need_weights=False)


def compare(
    batch=32,
    seq=128,
    d_model=256,
    num_heads=8,
    repeats=50,
    warmup=5,
    device=None,
):
    """Median seconds per forward+backward for both layers and their ratio
    (ours / torch)."""
    device = mha_lib.pick_device(device)
    torch.manual_seed(0)
    reference = nn.MultiheadAttention(d_model, num_heads, batch_first=True).to(
        device
    )
    ours = mha_lib.from_torch(reference)
    reference = SelfAttention(reference)
    x = torch.randn(batch, seq, d_model, device=device, requires_grad=True)
    times = time_interleaved(
        {"mha_lib": ours, "torch": reference},
        x,
        repeats=repeats,
        warmup=warmup,
    )
    medians = {name: summarize(values)[0] for name, values in times.items()}
    return {
        "device": str(device),
        **medians,
        "ratio": medians["mha_lib"] / medians["torch"],
    }


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--batch", type=int, default=32)
    parser.add_argument("--seq", type=int, default=128)
    parser.add_argument("--d-model", type=int, default=256)
    parser.add_argument("--heads", type=int, default=8)
    parser.add_argument("--repeats", type=int, default=50)
    parser.add_argument(
        "--device",
        default=None,
        help="cpu or cuda (default: cuda when present)",
    )
    args = parser.parse_args()
    result = compare(
        args.batch,
        args.seq,
        args.d_model,
        args.heads,
        args.repeats,
        device=args.device,
    )
    print(
        f"device {result['device']}: mha_lib {result['mha_lib'] * 1e3:.2f} "
        "ms, "
        f"torch {result['torch'] * 1e3:.2f} ms, ratio {result['ratio']:.3f}"
    )


if __name__ == "__main__":
    main()
