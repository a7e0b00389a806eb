"""Several models of one architecture run as one, through the architecture's
own forward.

:func:`stacked` copies a model and replaces each of its parameters by the
parameters of ``M`` models stacked along a new leading axis (the *members*
axis). The modules below notice the extra axis and give member ``m`` rows ``m *
B`` to ``(m + 1) * B - 1`` of their input: the members are folded into the
batch, one block of rows each. Every layer without parameters of its own,
attention included, runs unchanged on the folded batch. So training many seeds
together (:func:`mha_lib.training.train_together`) runs the one forward pass
that training one model runs, as a few large matrix products instead of many
small ones.

With unstacked parameters each module is exactly its ``torch.nn`` parent. A
model whose parameters live in these modules (or are added with
:func:`broadcast_add`) can be stacked.
"""

import copy

import torch
import torch.nn.functional as F
from torch import nn


def by_member(x, members):
    """``(members * rows, ..., features)`` -> ``(members, rows * ...,
    features)``."""
    return x.reshape(members, -1, x.shape[-1])


def broadcast_add(x, parameter):
    """``x + parameter``, the parameter broadcast over the leading (batch) axis
    of ``x``.

    With a stacked parameter, one more leading axis, each member adds its own
    copy to its rows: ``x`` (members * batch, ...) and ``parameter`` (members,
    ...).
    """
    if parameter.dim() < x.dim():
        return x + parameter
    members = parameter.shape[0]
    grouped = x.view(members, -1, *x.shape[1:])  # (members, batch, ...)
    return (grouped + parameter.unsqueeze(1)).view(x.shape)


class Linear(nn.Linear):
    """``nn.Linear``; with a weight ``(members, out, in)``, each member maps
    its own rows."""

    def forward(self, x):
        if self.weight.dim() == 2:
            return F.linear(x, self.weight, self.bias)
        members = self.weight.shape[0]
        rows = by_member(x, members)  # (members, rows, in)
        weight = self.weight.transpose(1, 2)  # (members, in, out)
        if self.bias is None:
            out = torch.bmm(rows, weight)
        else:
            out = torch.baddbmm(self.bias.unsqueeze(1), rows, weight)
        return out.view(*x.shape[:-1], -1)  # (members * batch, ..., out)


class Embedding(nn.Embedding):
    """``nn.Embedding``; with a weight ``(members, n, dim)``, each member looks
    up its rows."""

    def forward(self, ids):
        if self.weight.dim() == 2:
            return super().forward(ids)
        members = self.weight.shape[0]
        rows = ids.reshape(members, -1)  # (members, ids of one member)
        member = torch.arange(members, device=ids.device)[:, None]
        # (members * batch, ..., dim)
        return self.weight[member, rows].view(*ids.shape, -1)


class LayerNorm(nn.LayerNorm):
    """``nn.LayerNorm`` over the last axis; with weights ``(members, dim)``,
    one per member."""

    def forward(self, x):
        if self.weight is None or self.weight.dim() == 1:
            return super().forward(x)
        members = self.weight.shape[0]
        normed = by_member(
            F.layer_norm(x, self.normalized_shape, eps=self.eps), members
        )
        scaled = normed * self.weight[:, None]  # (members, rows, dim)
        if self.bias is not None:
            scaled = scaled + self.bias[:, None]
        return scaled.view(x.shape)


def stacked(models):
    """One module that runs all ``models`` (one architecture) at once: a copy
    of the first whose every parameter is the models' parameters stacked,
    ``(members, *shape)``."""
    if not models:
        raise ValueError("stacked needs at least one model")
    together = copy.deepcopy(models[0])
    named = [dict(model.named_parameters()) for model in models]
    for name in named[0]:
        parameters = torch.stack([params[name].detach() for params in named])
        owner, _, attribute = name.rpartition(".")
        setattr(
            together.get_submodule(owner), attribute, nn.Parameter(parameters)
        )
    return together


@torch.no_grad()
def unstack(together, models):
    """Copy member ``i`` of every parameter of ``together`` back into
    ``models[i]``."""
    stacked_parameters = dict(together.named_parameters())
    for index, model in enumerate(models):
        for name, parameter in model.named_parameters():
            parameter.copy_(stacked_parameters[name][index])
