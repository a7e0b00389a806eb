"""The memory a layer keeps for training: the formula, and measured (Chapter
5)."""

import contextlib

import torch

from ..spec import AttentionSpec
from .timing import forward_backward


def activation_elements(d_model, num_heads, seq_len, *, batch=1, **sizes):
    """Elements a self-attention layer keeps for the backward pass on the fused
    path.

    ``sizes`` are the other fields of :class:`~mha_lib.spec.AttentionSpec`;
    see :meth:`AttentionSpec.activation_elements
    <mha_lib.spec.AttentionSpec.activation_elements>`. Multiply by the element
    size for bytes.
    """
    spec = AttentionSpec(d_model, num_heads, **sizes)
    return spec.activation_elements(seq_len, batch)


# PyTorch's memory-efficient CUDA kernel, which serves float32 (as seen on an
# H200 with PyTorch 2.11; ROCm's kernels are not covered): it pads each head's
# log-sum-exp to a whole number of its backward's blocks of queries, and keeps
# a dropout seed and offset, 8 bytes each, even without dropout
LSE_BLOCK = 32
RNG_STATE_BYTES = 16


def kernel_padding_bytes(spec, seq_len, batch, device):
    """Bytes the fused kernel keeps for the backward pass beyond
    :meth:`~mha_lib.spec.AttentionSpec.activation_elements` (float32): none on
    the CPU; on CUDA the log-sum-exp padded to a multiple of ``LSE_BLOCK``
    queries and ``RNG_STATE_BYTES``, per call (PyTorch's float32 kernel, as
    seen on an H200)."""
    if torch.device(device).type != "cuda":
        return 0
    padded = -(-seq_len // LSE_BLOCK) * LSE_BLOCK
    return 4 * batch * spec.num_heads * (padded - seq_len) + RNG_STATE_BYTES


@contextlib.contextmanager
def fused_attention_kernel(x):
    """Context that lets ``scaled_dot_product_attention`` on ``x`` use only
    the fused kernels (flash and memory-efficient), which keep one log-sum-exp
    per query and head instead of the ``n x n`` weights. The formula assumes
    them; where no fused kernel takes the inputs, PyTorch's "No available
    kernel" becomes a ValueError that says what to change, instead of the
    weights being kept silently. Only that, on PyTorch before 2.3."""
    try:
        from torch.nn.attention import SDPBackend, sdpa_kernel
    except ImportError:  # PyTorch < 2.3
        only_fused = contextlib.nullcontext()
    else:
        only_fused = sdpa_kernel(
            [SDPBackend.FLASH_ATTENTION, SDPBackend.EFFICIENT_ATTENTION]
        )
    try:
        with only_fused:
            yield
    except RuntimeError as error:
        if "No available kernel" not in str(error):
            raise
        raise ValueError(
            f"no fused attention kernel takes these inputs on {x.device}, "
            "and the formula counts a fused kernel's memory, so nothing is "
            "measured. The CPU's needs values as wide as queries and keys; "
            "on a recent GPU (Ampere or newer) in float32, head sizes "
            "divisible by 4 (PyTorch's warnings above give its reasons)"
        ) from error


def saved_activation_bytes(layer, x):
    """Bytes of the tensors autograd saves for backward in one forward pass of
    ``layer(x)``.

    Measured inside :func:`fused_attention_kernel`, the same way on every
    device. The layer's own parameters are not counted; a storage saved twice
    (the input, read by three projections) counts once.
    """
    parameters = {p.untyped_storage().data_ptr() for p in layer.parameters()}
    saved = {}

    def pack(tensor):
        storage = tensor.untyped_storage()
        if storage.data_ptr() not in parameters:
            saved[storage.data_ptr()] = storage.nbytes()
        return tensor

    with fused_attention_kernel(x):
        with torch.autograd.graph.saved_tensors_hooks(
            pack, lambda tensor: tensor
        ):
            layer(x)
    return sum(saved.values())


def peak_training_bytes(layer, x):
    """Peak GPU memory allocated during one forward and backward of
    ``layer(x)`` inside :func:`fused_attention_kernel`, above what was
    allocated before; ``None`` off CUDA, where PyTorch keeps no such counter.

    One step runs unmeasured first: it allocates what stays from step to step
    (the parameters' gradients, and the workspace cuBLAS takes at a
    process's first product, 32 MiB on an H200, which would otherwise be
    charged to whichever layer is measured first).
    """
    if x.device.type != "cuda":
        return None
    with fused_attention_kernel(x):
        forward_backward(layer, x)
    torch.cuda.synchronize(x.device)
    torch.cuda.reset_peak_memory_stats(x.device)
    before = torch.cuda.memory_allocated(x.device)
    with fused_attention_kernel(x):
        forward_backward(layer, x)
    torch.cuda.synchronize(x.device)
    return torch.cuda.max_memory_allocated(x.device) - before
