"""The small Transformer baselines: causality, positional variants, RoPE's relative-position property."""

import pytest
import torch

from mamba_recall.models.transformer import TinyTransformer, apply_rope


@pytest.mark.parametrize("positional", ["none", "learned", "sinusoidal", "rope"])
@pytest.mark.parametrize("short_conv", [0, 3])
def test_causal_and_shapes(positional, short_conv):
    torch.manual_seed(0)
    model = TinyTransformer(
        17, d_model=16, n_layer=2, n_head=2, max_len=32, positional=positional, short_conv=short_conv
    )
    ids = torch.randint(0, 17, (3, 12))
    logits, attention = model(ids, return_attention=True)
    assert logits.shape == (3, 12, 17) and len(attention) == 2 and attention[0].shape == (3, 2, 12, 12)
    changed = ids.clone()
    changed[:, 7:] = (changed[:, 7:] + 1) % 17  # changing the future must not change the past
    assert torch.allclose(model(changed)[:, :7], logits[:, :7], atol=1e-6)
    assert not torch.allclose(model(changed)[:, 7:], logits[:, 7:])


def test_no_positional_information_is_permutation_equivariant_at_the_last_token():
    torch.manual_seed(0)
    model = TinyTransformer(11, d_model=16, n_layer=1, n_head=2, positional="none", mlp=False)
    ids = torch.tensor([[1, 2, 3, 4, 5]])
    shuffled = torch.tensor([[3, 1, 4, 2, 5]])
    assert torch.allclose(model(ids)[0, -1], model(shuffled)[0, -1], atol=1e-5)


def test_rope_scores_depend_only_on_relative_position():
    torch.manual_seed(0)
    q, k = torch.randn(1, 1, 1, 8), torch.randn(1, 1, 1, 8)
    rotated_q = apply_rope(q.expand(1, 1, 10, 8).contiguous())
    rotated_k = apply_rope(k.expand(1, 1, 10, 8).contiguous())
    scores = (rotated_q @ rotated_k.transpose(-1, -2))[0, 0]
    assert torch.allclose(scores[5, 2], scores[8, 5], atol=1e-5)
    assert torch.allclose(scores[3, 3], (q * k).sum(), atol=1e-5)


def test_bad_arguments_have_clear_errors():
    with pytest.raises(ValueError, match="positional"):
        TinyTransformer(5, positional="alibi")
    with pytest.raises(ValueError, match="max_len"):
        TinyTransformer(5, d_model=8, n_head=2, max_len=4)(torch.zeros(1, 6, dtype=torch.long))
    with pytest.raises(ValueError, match="divisible"):
        TinyTransformer(5, d_model=10, n_head=4)
