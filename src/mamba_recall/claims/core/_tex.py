"""A paper's simple TeX as the characters it prints, for text that is not typeset as math (a quote beside a
verdict, in a notebook's Markdown output or on a generated page: MyST-NB draws Markdown outputs as CommonMark,
where ``$…$`` stays raw)."""

from __future__ import annotations

import re

#: TeX commands a paper's quote uses, as the characters they print (:func:`tex_to_unicode`).
TEX_SYMBOLS = {
    "ll": "≪",
    "gg": "≫",
    "le": "≤",
    "leq": "≤",
    "ge": "≥",
    "geq": "≥",
    "neq": "≠",
    "approx": "≈",
    "sim": "∼",
    "gtrsim": "≳",
    "lesssim": "≲",
    "propto": "∝",
    "equiv": "≡",
    "times": "×",
    "cdot": "·",
    "cdots": "⋯",
    "ldots": "…",
    "dots": "…",
    "pm": "±",
    "in": "∈",
    "to": "→",
    "rightarrow": "→",
    "leftarrow": "←",
    "mapsto": "↦",
    "infty": "∞",
    "partial": "∂",
    "nabla": "∇",
    "sum": "Σ",
    "prod": "Π",
    "odot": "⊙",
    "top": "⊤",
    "alpha": "α",
    "beta": "β",
    "gamma": "γ",
    "delta": "δ",
    "epsilon": "ε",
    "varepsilon": "ε",
    "eta": "η",
    "theta": "θ",
    "kappa": "κ",
    "lambda": "λ",
    "mu": "μ",
    "nu": "ν",
    "pi": "π",
    "rho": "ρ",
    "sigma": "σ",
    "tau": "τ",
    "phi": "φ",
    "varphi": "φ",
    "chi": "χ",
    "psi": "ψ",
    "omega": "ω",
    "Gamma": "Γ",
    "Delta": "Δ",
    "Theta": "Θ",
    "Lambda": "Λ",
    "Sigma": "Σ",
    "Phi": "Φ",
    "Psi": "Ψ",
    "Omega": "Ω",
    "log": "log",
    "exp": "exp",
    "ln": "ln",
    "min": "min",
    "max": "max",
    "quad": " ",
    "qquad": " ",
    ",": " ",
    ";": " ",
    "!": "",
    " ": " ",
    "left": "",
    "right": "",
    "big": "",
    "Big": "",
    "mid": "|",
    "lVert": "‖",
    "rVert": "‖",
    "|": "‖",
    "stackrel": "",
    "lvert": "|",
    "rvert": "|",
    "{": "{",
    "}": "}",
    "%": "%",
    "_": "_",
    "$": "$",
}
_SUB = str.maketrans("0123456789+-−=()aeoxijkmnpt", "₀₁₂₃₄₅₆₇₈₉₊₋₋₌₍₎ₐₑₒₓᵢⱼₖₘₙₚₜ")
_SUP = str.maketrans("0123456789+-−=()nTi", "⁰¹²³⁴⁵⁶⁷⁸⁹⁺⁻⁻⁼⁽⁾ⁿᵀⁱ")
_GROUP = r"\{([^{}]*)\}"


def _script(text: str, table: dict, mark: str) -> str:
    """``text`` in sub- or superscript characters when each has one, else ``mark`` and the text (in parentheses
    when longer than a character)."""
    if text and all(ch.translate(table) != ch or ch == " " for ch in text):
        return text.translate(table)
    return mark + (text if len(text) == 1 else f"({text})")


def tex_to_unicode(text: str) -> str:
    """A paper's sentence with its simple TeX written as the characters it prints, for text that is not typeset as
    math (a quote beside a verdict): ``$V_k = \\frac{V}{2}$`` → ``V_k = V/2`` (``Vₖ``), ``\\ll`` → ``≪``; the
    ``$`` delimiters go. Commands it does not know keep their name without the backslash (``\\mathbf{x}`` → ``x``)."""
    if "\\" not in text and "$" not in text:
        return text
    t = text.replace("$$", "").replace("$", "")
    for _ in range(4):  # nested groups, innermost first
        t = re.sub(
            r"\\(?:mathbf|mathrm|mathbb|mathcal|mathit|boldsymbol|text|textbf|textit|operatorname|hat|bar|tilde|vec)\s*"
            + _GROUP,
            r"\1",
            t,
        )
        t = re.sub(r"\\[dt]?frac\s*" + _GROUP + r"\s*" + _GROUP, lambda m: f"{_atom(m[1])}/{_atom(m[2])}", t)
        t = re.sub(r"\\sqrt\s*" + _GROUP, lambda m: f"√{_atom(m[1])}", t)
        t = re.sub(r"_" + _GROUP, lambda m: _script(m[1], _SUB, "_"), t)
        t = re.sub(r"\^" + _GROUP, lambda m: _script(m[1], _SUP, "^"), t)
    t = re.sub(r"\\([A-Za-z]+|[,;! |{}%_$])", lambda m: TEX_SYMBOLS.get(m[1], m[1]), t)
    t = re.sub(r"_([A-Za-z0-9])", lambda m: _script(m[1], _SUB, "_"), t)
    t = re.sub(r"\^([A-Za-z0-9])", lambda m: _script(m[1], _SUP, "^"), t)
    t = re.sub(r"(?<!\\)[{}]", "", t)
    return re.sub(r"[ \t]{2,}", " ", t)


def _atom(text: str) -> str:
    """A fraction's numerator or denominator: in parentheses unless one symbol or number."""
    return text if re.fullmatch(r"√?[\w.|′]+", text) else f"({text})"
