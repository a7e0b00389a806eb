"""Measuring what layers compute: comparisons of outputs and attention (Chapters 2-4)."""

import torch


def relative_difference(output, reference):
    """``||output - reference|| / ||reference||`` as a float (Frobenius norms over all entries)."""
    if not isinstance(output, torch.Tensor) or not isinstance(reference, torch.Tensor):
        raise TypeError("relative_difference expects two torch.Tensors")
    if output.shape != reference.shape:
        raise ValueError(
            f"relative_difference needs tensors of one shape, got {tuple(output.shape)} and {tuple(reference.shape)}"
        )
    return ((output - reference).norm() / reference.norm()).item()
