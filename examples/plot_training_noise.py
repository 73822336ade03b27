r"""
Training the deep stochastic Transformer: constant vs random value matrices
===========================================================================

The paper's Figure 2 trains a Transformer made of its layer,
:math:`X_i \leftarrow N(X_i + L^{-1/2} V_k A_\beta(X_i, X))`, with two
initializations of the value matrices: one identity shared by all layers (the
deterministic model of earlier theory) or independent Gaussian matrices per layer (the
noise of the SDE limit). It reports that suppressing the noise degrades accuracy.

This is a small version on scikit-learn's 8 x 8 digits (16 tokens of 2 x 2 patches,
:math:`d = 16`, :math:`L = 8`), one seed, four epochs: a first look in seconds. The full
experiment, five seeds and three initializations with min-max bands, is
``spheresde train`` (:doc:`/theory/training`).
"""

# %%
# The tokens at initialization, layer by layer
# --------------------------------------------
# The theory predicts that deterministic weights gather the tokens into one cluster while
# noise keeps them apart. :meth:`spheresde.TransformerClassifier.tokens` gives the
# tokens after every layer; we plot the mean cosine :math:`\langle X_i, X_j\rangle`,
# :math:`i \ne j`, over 200 validation digits. The same key gives both networks the same
# embedding: only the value matrices differ.
import equinox as eqx
import jax
import jax.numpy as jnp
import matplotlib.pyplot as plt
import numpy as np

import spheresde

data = spheresde.load_digits(seed=0)
x_train, y_train = jnp.asarray(spheresde.patchify(data.train_images, 2)), data.train_labels
x_val, y_val = jnp.asarray(spheresde.patchify(data.val_images, 2)), data.val_labels
layers, d, epochs, batch = 8, 16, 4, 64
inits = ("constant", "random")
colors = {"constant": "#d62fa0", "random": "#6a3fb5"}


def create(weights):
    return spheresde.TransformerClassifier.create(
        jax.random.key(0), patches=x_train.shape[1], patch_size=x_train.shape[2], classes=10,
        d=d, layers=layers, weights=weights, sigma=1.0, beta=1.0)


fig, (ax, bx) = plt.subplots(1, 2, figsize=(10, 3.8))
for weights in inits:
    model = create(weights)
    history = jax.vmap(lambda p, m=model: m.tokens(p, every_layer=True))(x_val[:200])
    gram = jnp.einsum("bkid,bkjd->bkij", history, history)
    n = history.shape[2]
    cosine = (gram.sum(axis=(2, 3)) - n) / (n * (n - 1))
    ax.plot(np.arange(layers + 1), cosine.mean(axis=0), color=colors[weights], marker="o",
            label=f"{weights} weights")
ax.set_xlabel("layer")
ax.set_ylabel(r"mean $\langle X_i, X_j\rangle$")
ax.set_title("tokens at initialization", fontsize=10)
ax.legend()

# %%
# A short training run
# --------------------
# AdamW with warm-up and cosine decay (:func:`spheresde.classifier_optimizer`), one
# jitted ``lax.scan`` per epoch (:func:`spheresde.train_epoch`).
steps = len(y_train) // batch
optim = spheresde.classifier_optimizer(1e-2, 1e-4, steps * epochs)
for weights in inits:
    model = create(weights)
    state = optim.init(eqx.filter(model, eqx.is_inexact_array))
    accuracy = [spheresde.evaluate_classifier(model, x_val, y_val, tol=1e-2).accuracy]
    for epoch in range(epochs):
        order = jax.random.permutation(jax.random.key(epoch), len(y_train))
        model, state, loss = spheresde.train_epoch(model, state, optim, x_train, y_train,
                                                   order[:steps * batch].reshape(steps, batch))
        accuracy.append(spheresde.evaluate_classifier(model, x_val, y_val, tol=1e-2).accuracy)
    print(f"{weights:8s}: validation accuracy per epoch", np.round(accuracy, 3))
    bx.plot(np.arange(epochs + 1), accuracy, color=colors[weights], marker="o",
            label=f"{weights} weights")
bx.set_xlabel("epoch")
bx.set_ylabel("validation accuracy")
bx.set_title(f"digits, L={layers}, d={d}, one seed", fontsize=10)
bx.legend()
fig.tight_layout()
plt.show()

# %%
# One seed and four epochs say little about which initialization trains better: the
# runs of ``spheresde train`` (five seeds, min-max bands) and the numbers in
# ``REPORT.md`` do.
