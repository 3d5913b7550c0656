"""Chapter 3 models: parameter counts of Tab. 1, shapes, scan backends agree, Δ⊤ recurrence."""

import pytest
import torch

from mamba_recall.models.s6 import DeltaTMixer, MixerLM, count_parameters


def test_keep_parameter_counts_match_table1():
    assert count_parameters(MixerLM(128, 32, 8, "s6", pe=True)) == 9152
    assert count_parameters(MixerLM(128, 32, 8, "s6", pe=False)) == 9280


@pytest.mark.parametrize("mixer", ["s6", "s4d", "s6_dT"])
def test_mixer_lm_shapes_and_backends(mixer):
    torch.manual_seed(0)
    m = MixerLM(20, 8, 4, mixer, pe=True, use_conv=True, use_gate=True, n_classes=7).double()
    ids = torch.randint(0, 20, (3, 11))
    out = m(ids)
    assert out.shape == (3, 11, 7)
    if mixer != "s6_dT":
        m.mixer.backend = "reference"
        assert torch.allclose(out, m(ids), atol=1e-10)
    out.sum().backward()


def test_delta_t_mixer_matches_loop():
    torch.manual_seed(1)
    mix = DeltaTMixer(3, 2).double()
    x = torch.randn(2, 6, 3, dtype=torch.float64)
    y = mix(x)
    dt, B, C = mix.x_proj(x).split([2, 2, 2], dim=-1)
    delta = torch.nn.functional.softplus(dt + mix.delta_bias)
    h = torch.zeros(2, 3, 2, dtype=torch.float64)
    for t in range(6):
        h = torch.exp(-torch.exp(mix.A_log) * delta[:, t, None, :]) * h + x[:, t, :, None] * B[:, t, None, :]
        assert torch.allclose(y[:, t], torch.einsum("bdn,bn->bd", h, C[:, t]), atol=1e-12)


def test_mixer_lm_rejects_bad_options():
    with pytest.raises(ValueError, match="mixer"):
        MixerLM(10, 8, 4, "lstm")
    with pytest.raises(ValueError, match="pe_scale"):
        MixerLM(10, 8, 4, pe=True, pe_scale="log")
    with pytest.raises(ValueError, match="batch, T"):
        MixerLM(10, 8, 4)(torch.zeros(5, dtype=torch.long))


def test_mamba2_mixer_backends_agree():
    torch.manual_seed(2)
    m = MixerLM(20, 8, 4, "mamba2", n_classes=16).double()
    ids = torch.randint(0, 20, (2, 12))
    out = m(ids)
    m.mixer.backend = "reference"
    assert torch.allclose(out, m(ids), atol=1e-10)
