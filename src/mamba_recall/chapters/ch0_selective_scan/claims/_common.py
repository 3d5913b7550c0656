"""What the sections of Chapter 0 share (the package's internals): the document's sentence each claim tests."""

from __future__ import annotations


# The document's sentence each claim tests, verbatim (pieces joined by " … ").
QUOTES = {
    "001/Delta1": "Δ₁ = softplus(W_Δ · u₁) … = softplus(0.1) = log(1 + exp(0.1)) ≈ log(1 + 1.105) ≈ log(2.105) ≈ 0.743",
    "001/Delta2": "Δ₂ = softplus(W_Δ · u₂) … = softplus(0.2) ≈ log(1 + exp(0.2)) ≈ log(1.221) ≈ 0.803",
    "001/Delta3": "Δ₃ = softplus(W_Δ · u₃) … = softplus(0.04) ≈ log(1 + exp(0.04)) ≈ log(1.041) ≈ 0.693",
    "001/Abar": "= [[e^(-0.743), 0], [0, e^(-0.372)]] = [[0.475, 0], [0, 0.690]] … = [[e^(-0.803), 0], [0, e^(-0.402)]] = [[0.448, 0], [0, 0.668]] … = [[e^(-0.693), 0], [0, e^(-0.347)]] = [[0.500, 0], [0, 0.706]]",
    "001/Bbar": "= 0.743 × [[0.4], [0.3]] = [[0.297], [0.223]] … B̄₂ = 0.803 × [[0.8], [0.6]] = [[0.642], [0.482]] … B̄₃ = 0.693 × [[0.16], [0.12]] = [[0.111], [0.083]]",
    "001/states": "After “The”: state = [0.149, 0.112] (small, just the first word) … After “The cat”: state = [0.709, 0.557] … After “The cat sat”: state = [0.377, 0.410]",
    "001/outputs": "Output for token 1: 0.074 … Output for token 2: 0.719 … Output for token 3: 0.086",
    "001/own-delta": "B̄₁ = Δ₁ × B₁ = 0.743 × [[0.4], [0.3]] = [[0.297], [0.223]] … x₂ = [[0.067], [0.075]] + [[0.642], [0.482]] = [[0.709], [0.557]] … = 0.053 + 0.033 = 0.086",
    "001/own-delta-Abar": "Ā₁ = e^(Δ₁ × A) = e^(0.743 × [[-1.0, 0], [0, -0.5]]) … Ā₂ = e^(0.803 × [[-1.0, 0], [0, -0.5]]) … Ā₃ = e^(0.693 × [[-1.0, 0], [0, -0.5]])",
    "001/KeyObs1": "Token “cat” (strong, u=1.0): Large Δ=0.803 → slower decay (Ā has larger eigenvalues like 0.448, 0.668) … Token “sat” (weak, u=0.2): Smaller Δ=0.693 → faster decay (Ā has smaller eigenvalues)",
    "001/KeyObs2": "After “The cat”: state = [0.709, 0.557] (much larger, dominated by “cat”) … After “The cat sat”: state = [0.377, 0.410] (smaller again, “sat” weak, previous state decaying) … The state is a running summary, with emphasis on recent strong inputs.",
    "001/KeyObs3": "The outputs reflect input importance, with “cat” producing the strongest signal.",
    "001/linear-time-scan": "But the core mechanism — selective memory, input-dependent decay, and efficient linear-time processing — is captured in this simple example.",
    "001/linear-memory": "But the core mechanism — selective memory, input-dependent decay, and efficient linear-time processing — is captured in this simple example.",
}
