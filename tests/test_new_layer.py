"""The recipe "A new layer" of ``docs/contributing.rst``, followed literally: one function of
the tokens and one registration, and the registry tests, the laws and every sweep take
the new layer as they take the paper's."""

import csv

import pytest

from proofs_check.engine import GaussianMatrix, softmax
from proofs_check.symbols import beta, eps, s
from spheresde.cli import main
from spheresde.transformer import Layer, layer, layers, register_layer

V = GaussianMatrix("V", std=eps)
W = GaussianMatrix("W", std=eps / 2)


def two_temperatures(tokens):
    soft, sharp = softmax(tokens, beta), softmax(tokens, 3 * beta)
    return [s * (V @ a) + s * (W @ b) for a, b in zip(soft, sharp, strict=True)]


register_layer(Layer("two_temperatures", two_temperatures, "soft and sharp heads"))


def test_the_layer_is_registered_once():
    assert "two_temperatures" in layers()
    register_layer(Layer("two_temperatures", two_temperatures, "soft and sharp heads"))
    with pytest.raises(ValueError, match="'two_temperatures' is taken"):
        register_layer(Layer("two_temperatures", lambda tokens: two_temperatures(tokens)))


def test_its_laws_are_derived():
    chosen = layer("two_temperatures")
    assert chosen.equilibria()
    # lambda_- = eps^2 ((d - 1) sech^2(2 beta) - 2) + (eps/2)^2 ((d - 1) sech^2(6 beta) - 2)
    # for two pure-noise heads (proofs_check.layers.heads_layer): its root in beta at d = 4
    # lies where the paper's head alone is still repelling (beta < 0.6585)
    beta_c = chosen.critical_beta(4)
    assert 0.3 < beta_c < 0.6585
    p = chosen.antipodal_probability(2.0, 4)
    assert 0.0 < p < 0.5


@pytest.mark.slow
@pytest.mark.parametrize("command", ["phase", "tokens", "hybrid", "dominance"])
def test_every_sweep_takes_it(command, tmp_path):
    # in this process, where the registration ran: no other edit
    sizes = {"phase": ["--method", "exact", "--dims", "4", "--betas", "1,2"],
             "tokens": ["--tokens", "3", "--betas", "2", "--dim", "3", "--trajectories",
                        "16", "--layers", "5", "--horizon", "2"],
             "hybrid": ["--tokens", "2", "--method", "exact", "--betas", "2",
                        "--eps", "1"],
             "dominance": ["--tokens", "2", "--betas", "2", "--eps", "0.5,1",
                           "--trajectories", "16", "--horizon", "2", "--horizon-scale", "0",
                           "--max-horizon", "0"]}[command]
    out = tmp_path / command
    status = main([command, "--layer", "two_temperatures", *sizes, "--out", str(out),
                   "--quiet"])
    assert status == 0
    with open(out / f"{command}.csv") as f:
        rows = list(csv.DictReader(f))
    assert rows
    assert {r["layer"] for r in rows} == {"two_temperatures"}
    if command in ("phase", "hybrid"):  # the exact law of the layer, not the paper's
        d, mu = (4, 0.0) if command == "phase" else (3, 1.0)  # hybrid: d = 3, mu = 1
        expected = layer("two_temperatures").antipodal_probability(2.0, d, mu=mu)
        at_two = [r for r in rows if float(r["beta"]) == 2.0]
        assert float(at_two[0]["p_antipodal"]) == pytest.approx(expected, abs=1e-12)
