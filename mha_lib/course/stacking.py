"""Several models of one architecture run as one, through the architecture's
own forward.

:func:`stacked` copies a model and replaces each module that holds weights
(``nn.Linear``, ``nn.Embedding``, ``nn.LayerNorm``, a chunked layer's
projections) by a stacked twin: the same parameters of ``M`` models stacked
along a new leading axis (the *members* axis). The twins give member ``m`` rows
``m * B`` to ``(m + 1) * B - 1`` of their input: the members are folded into
the batch, one block of rows each. Every module without weights of its own,
attention included, runs unchanged on the folded batch. So training many seeds
together (:func:`mha_lib.course.training.train_together`) runs the one forward
pass that training one model runs, as a few large matrix products instead of
many small ones. The layers themselves know nothing of members.

A parameter held directly by a module (a table of learned positions) is
stacked in place; the model adds it with :func:`broadcast_add`.
"""

import copy

import torch
import torch.nn.functional as F
from torch import nn

from ..layers import ChunkedLinear


def check_members(x, members):
    """``x``'s leading (batch) axis, refused where it does not split into
    ``members`` equal blocks (one per stacked model)."""
    if x.dim() == 0 or x.shape[0] % members:
        raise ValueError(
            f"a stack of {members} models takes a batch of members * rows, "
            f"one block of rows per member; got shape {tuple(x.shape)}, "
            f"whose {x.shape[0] if x.dim() else 'missing'} rows do not "
            f"split into {members}"
        )
    return x.shape[0]


def by_member(x, members):
    """``(members * rows, ..., features)`` -> ``(members, rows * ...,
    features)``."""
    check_members(x, members)
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
    check_members(x, members)
    grouped = x.view(members, -1, *x.shape[1:])  # (members, batch, ...)
    return (grouped + parameter.unsqueeze(1)).view(x.shape)


class _Stacked(nn.Module):
    """The parameters of ``modules`` (one class) stacked, ``(members,
    *shape)``, under the same names, and their sizes named in ``KEEP``."""

    KEEP = ()

    def __init__(self, modules):
        super().__init__()
        for name in self.KEEP:
            setattr(self, name, getattr(modules[0], name))
        for name, _ in modules[0].named_parameters(recurse=False):
            parameters = [getattr(m, name).detach() for m in modules]
            self.register_parameter(
                name, nn.Parameter(torch.stack(parameters))
            )
        for name in ("bias", "weight"):  # an absent bias stays None
            if getattr(modules[0], name, 0) is None:
                self.register_parameter(name, None)


class Linear(_Stacked):
    """Stacked ``nn.Linear``: weight ``(members, out, in)``; each member maps
    its own rows."""

    KEEP = ("in_features", "out_features")

    def forward(self, x):
        rows = by_member(x, self.weight.shape[0])  # (members, rows, in)
        weight = self.weight.transpose(1, 2)  # (members, in, out)
        if self.bias is None:
            out = torch.bmm(rows, weight)
        else:
            out = torch.baddbmm(self.bias.unsqueeze(1), rows, weight)
        return out.view(*x.shape[:-1], -1)  # (members * batch, ..., out)


class Embedding(_Stacked):
    """Stacked ``nn.Embedding``: weight ``(members, n, dim)``; each member
    looks up its own rows."""

    KEEP = ("num_embeddings", "embedding_dim")

    def forward(self, ids):
        members = self.weight.shape[0]
        check_members(ids, members)
        rows = ids.reshape(members, -1)  # (members, ids of one member)
        member = torch.arange(members, device=ids.device)[:, None]
        # (members * batch, ..., dim)
        return self.weight[member, rows].view(*ids.shape, -1)


class LayerNorm(_Stacked):
    """Stacked ``nn.LayerNorm`` over the last axis: weights ``(members,
    dim)``."""

    KEEP = ("normalized_shape", "eps")

    def forward(self, x):
        normed = F.layer_norm(x, self.normalized_shape, eps=self.eps)
        normed = by_member(normed, self.weight.shape[0])  # (members, rows, d)
        scaled = normed * self.weight[:, None]
        if self.bias is not None:
            scaled = scaled + self.bias[:, None]
        return scaled.view(x.shape)


class Chunked(_Stacked):
    """Stacked :class:`~mha_lib.layers.ChunkedLinear`: weight ``(members,
    heads, chunk, chunk)``."""

    def forward(self, x):
        members, heads, chunk, _ = self.weight.shape
        batch, seq, _ = x.shape
        check_members(x, members)
        # (members * batch, seq, heads * chunk) -> (members, batch, seq,
        # heads, chunk)
        chunks = x.view(members, batch // members, seq, heads, chunk)
        # the layout of ChunkedLinear: computed (seq, heads), returned as a
        # transposed view
        out = torch.einsum("mbshi,mhoi->mbsho", chunks, self.weight)
        out = out.contiguous()
        if self.bias is not None:
            out = out + self.bias[:, None, None]
        # (members * batch, seq, heads, chunk) -> (..., heads, seq, chunk)
        return out.flatten(0, 1).transpose(1, 2)


TWINS = {
    nn.Linear: Linear,
    nn.Embedding: Embedding,
    nn.LayerNorm: LayerNorm,
    ChunkedLinear: Chunked,
}


def stacked(models):
    """One module that runs all ``models`` (one architecture) at once: a copy
    of the first whose weighted modules are replaced by their stacked twins."""
    if not models:
        raise ValueError("stacked needs at least one model")
    if type(models[0]) in TWINS:
        return TWINS[type(models[0])](models)
    # a copy of the first's structure: its parameters are not copied (the
    # copy shares them until each is replaced by its stacked twin below)
    shared = {id(p): p for p in models[0].parameters()}
    together = copy.deepcopy(models[0], memo=shared)
    names = [name for name, _ in together.named_modules()]
    for name in names:
        module = together.get_submodule(name)
        parts = [model.get_submodule(name) for model in models]
        if type(module) in TWINS and list(module.parameters()):
            owner, _, attribute = name.rpartition(".")
            twin = TWINS[type(module)](parts)
            setattr(together.get_submodule(owner), attribute, twin)
        elif not isinstance(module, _Stacked):
            for attribute, _ in module.named_parameters(recurse=False):
                values = [getattr(p, attribute).detach() for p in parts]
                setattr(module, attribute, nn.Parameter(torch.stack(values)))
    return together


@torch.no_grad()
def unstack(together, models):
    """Copy member ``i`` of every parameter of ``together`` back into
    ``models[i]``."""
    stacked_parameters = dict(together.named_parameters())
    for index, model in enumerate(models):
        for name, parameter in model.named_parameters():
            parameter.copy_(stacked_parameters[name][index])
