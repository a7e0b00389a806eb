"""Measuring the memory a layer needs for training (Chapter 5)."""

import torch

from .timing import forward_backward


def saved_activation_bytes(layer, x):
    """Bytes of the tensors autograd saves for backward in one forward pass of ``layer(x)``.

    Works the same on every device. The layer's own parameters are not counted; a storage
    saved twice (the input, read by three projections) counts once.
    """
    parameters = {parameter.untyped_storage().data_ptr() for parameter in layer.parameters()}
    saved = {}

    def pack(tensor):
        storage = tensor.untyped_storage()
        if storage.data_ptr() not in parameters:
            saved[storage.data_ptr()] = storage.nbytes()
        return tensor

    with torch.autograd.graph.saved_tensors_hooks(pack, lambda tensor: tensor):
        layer(x)
    return sum(saved.values())


def peak_training_bytes(layer, x):
    """Peak GPU memory allocated during one forward and backward of ``layer(x)``, above what was
    allocated before; ``None`` off CUDA, where PyTorch keeps no such counter."""
    if x.device.type != "cuda":
        return None
    torch.cuda.synchronize(x.device)
    torch.cuda.reset_peak_memory_stats(x.device)
    before = torch.cuda.memory_allocated(x.device)
    forward_backward(layer, x)
    torch.cuda.synchronize(x.device)
    return torch.cuda.max_memory_allocated(x.device) - before
