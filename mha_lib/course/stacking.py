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

Any other module that holds parameters of its own (a layer with a learned
gate per head, say) needs no twin written for it: :class:`Vmapped` stacks its
parameters under the same names and runs its own forward once per member with
``torch.func.vmap``, slower than a twin but exact. A module that adds its own
parameters with :func:`broadcast_add` (a table of learned positions) names
them in ``stacked_in_place``; they are stacked in place.
"""

import copy
import warnings

import torch
import torch.nn.functional as F
from torch import nn
from torch.func import functional_call, vmap

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


class Vmapped(nn.Module):
    """Any module of one class, stacked: its parameters ``(members, *shape)``
    under a member's names, its own forward run once per member by
    ``torch.func.vmap`` on that member's rows.

    Positional tensors are split into members (one block of rows each);
    keyword arguments (masks, flags) are shared by every member. Outputs are
    tensors, or tuples of tensors and ``None``.
    """

    def __init__(self, modules):
        super().__init__()
        shared = {id(p): p for p in modules[0].parameters()}
        template = copy.deepcopy(modules[0], memo=shared)
        for name, child in template.named_children():
            self.add_module(name, child)  # the children the template calls
        for name, _ in modules[0].named_buffers(recurse=False):
            self.register_buffer(name, getattr(template, name))
        for name, _ in modules[0].named_parameters():
            owner, _, attribute = name.rpartition(".")
            values = [m.get_parameter(name).detach() for m in modules]
            owner = self.get_submodule(owner) if owner else self
            owner.register_parameter(
                attribute, nn.Parameter(torch.stack(values))
            )
        self.template = (template,)  # in a tuple: not a child of this twin

    def forward(self, *inputs, **options):
        parameters = dict(self.named_parameters())
        buffers = dict(self.named_buffers())
        members = next(iter(parameters.values())).shape[0]
        split = [
            x.view(members, check_members(x, members) // members, *x.shape[1:])
            if torch.is_tensor(x)
            else x
            for x in inputs
        ]  # each tensor (members * batch, ...) -> (members, batch, ...)
        dims = [0 if torch.is_tensor(x) else None for x in inputs]
        layout = []  # the output's structure: where its tensors go

        def member(own, *rows):
            out = functional_call(
                self.template[0], (own, buffers), rows, options
            )
            layout[:] = [out] if torch.is_tensor(out) else list(out)
            return tuple(x for x in layout if x is not None)

        with warnings.catch_warnings():  # a kernel vmap runs one by one
            warnings.filterwarnings("ignore", "There is a performance drop")
            tensors = iter(
                vmap(member, in_dims=(0, *dims))(parameters, *split)
            )
        # each (members, batch, ...) -> (members * batch, ...)
        out = [
            None if x is None else next(tensors).flatten(0, 1) for x in layout
        ]
        return out[0] if len(out) == 1 and out[0] is not None else tuple(out)


TWINS = {
    nn.Linear: Linear,
    nn.Embedding: Embedding,
    nn.LayerNorm: LayerNorm,
    ChunkedLinear: Chunked,
}


def twin(parts):
    """The stacked twin of one module of each model: a written twin
    (``TWINS``), a :class:`Vmapped` module for any other module that holds
    parameters, or None for a module whose parameters are its children's or
    stacked in place (``stacked_in_place``)."""
    first = parts[0]
    own = {name for name, _ in first.named_parameters(recurse=False)}
    if type(first) in TWINS and own:
        return TWINS[type(first)](parts)
    if own - set(getattr(first, "stacked_in_place", ())):
        return Vmapped(parts)
    return None


def stacked(models):
    """One module that runs all ``models`` (one architecture) at once: a copy
    of the first whose modules with parameters are replaced by their stacked
    twins (:func:`twin`)."""
    if not models:
        raise ValueError("stacked needs at least one model")
    whole = twin(models)
    if whole is not None:
        return whole
    # a copy of the first's structure: its parameters are not copied (the
    # copy shares them until each is replaced by its stacked twin below)
    shared = {id(p): p for p in models[0].parameters()}
    together = copy.deepcopy(models[0], memo=shared)
    replaced = []  # the twins' names: the modules below them are theirs
    for name, module in list(together.named_modules()):
        if any(name.startswith(done + ".") for done in replaced):
            continue
        parts = [model.get_submodule(name) for model in models]
        new = twin(parts) if name else None  # the whole: not a twin, above
        if new is not None:
            owner, _, attribute = name.rpartition(".")
            setattr(together.get_submodule(owner), attribute, new)
            replaced.append(name)
            continue
        for attribute in getattr(module, "stacked_in_place", ()):
            values = [part.get_parameter(attribute).detach() for part in parts]
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
