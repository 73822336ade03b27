r"""An image classifier made of the paper's layer (its Figure 5), for the Figure 2 training.

An image is cut into ``n`` patches, each embedded linearly into :math:`\mathbb R^d`
(plus a learned position), and normalized onto the unit sphere: the tokens
:math:`X^0`. Then ``L`` layers of the deep stochastic Transformer of
:doc:`/theory/discrete_model`,

.. math::

    X_i^{k+1} = \frac{X_i^k + L^{-1/2} V_k A_\beta(X_i^k, X^k)}
                     {|X_i^k + L^{-1/2} V_k A_\beta(X_i^k, X^k)|},

with trainable value matrices :math:`V_k` and trainable query and key matrices
:math:`Q_k, K_k` (the identity at initialization, the paper's choice), and a linear head
on the mean of the output tokens. Attention is :func:`spheresde.transformer.attention` and the
normalization a registered one (``norm``, the paper's :math:`Y/|Y|` by default, LayerNorm
with ``norm="layer"``), the objects the simulations use.

The initializations of the value matrices (:func:`init_values`) are the two of the
paper's Figure 2 and a third that separates their two differences:

- ``"constant"``: ONE matrix shared (tied) by all layers, the identity at
  initialization: the deterministic model of earlier theory, and it stays tied in
  training;
- ``"random"``: an independent :math:`V_k` per layer with iid :math:`N(0, \sigma^2/d)`
  entries. In the conventions of the SDE (entries :math:`N(0, \sigma_{\rm SDE}^2)`) this
  is :math:`\sigma_{\rm SDE} = \sigma/\sqrt d` over a depth-time :math:`T = 1`, whose
  angular diffusion :math:`\sigma_{\rm SDE}^2 (d-1) \approx \sigma^2` is of order one
  whatever :math:`d` (see :doc:`/theory/training`);
- ``"identity"``: independent :math:`V_k`, each the identity at initialization (untied,
  but noiseless).
"""

from __future__ import annotations

import functools
from typing import Literal, NamedTuple

import equinox as eqx
import jax
import jax.numpy as jnp
import numpy as np
import optax

from .. import _checks
from .._typing import Array, Bool, Float, PRNGKeyArray
from ..transformer._attention import attention
from ..transformer._normalization import normalization
from ..transformer._outcomes import classify
from ..transformer._weights import residual_step

Init = Literal["constant", "random", "identity"]
INITS: tuple[str, ...] = ("constant", "random", "identity")


def init_values(key: PRNGKeyArray, weights: Init, layers: int, d: int, sigma: float = 1.0,
                dtype=jnp.float32) -> Float[Array, "m d d"]:
    r"""The value matrices at initialization: ``(1, d, d)`` when tied, else ``(L, d, d)``.

    ``"constant"``: one identity, tied across the ``L`` layers; ``"identity"``: ``L``
    independent identities; ``"random"``: ``L`` independent matrices with iid
    :math:`N(0, \sigma^2/d)` entries.
    """
    _checks.classifier(layers=layers, d=d, sigma=sigma, dtype=dtype)
    if weights == "constant":
        return jnp.eye(d, dtype=dtype)[None]
    if weights == "identity":
        return jnp.tile(jnp.eye(d, dtype=dtype), (layers, 1, 1))
    if weights == "random":
        return (sigma / np.sqrt(d) * jax.random.normal(key, (layers, d, d), dtype)).astype(dtype)
    raise ValueError(f"weights={weights!r}: use one of {', '.join(INITS)}")


class TransformerClassifier(eqx.Module):
    """Patch embedding, ``L`` layers of the paper's Transformer on the sphere, linear head.

    The value matrices are always stored ``(L, d, d)``; with ``tied`` (the ``"constant"``
    initialization) only the first is used, by every layer. All initializations of one
    size therefore have the same pytree structure, so a jitted training epoch compiles
    once for all of them and all seeds.

    Build it with :meth:`create`; call it on one image's patches ``(n, p)`` for the
    logits, or use :meth:`tokens` for the tokens after every layer.
    """

    embed: eqx.nn.Linear
    position: Float[Array, "n d"]
    values: Float[Array, "L d d"]
    # constant weights: every layer uses values[0]. An array, not a static flag, so that
    # the three initializations share one pytree structure and one compiled epoch.
    tied: Bool[Array, ""]
    queries: Float[Array, "L d d"]
    keys: Float[Array, "L d d"]
    head: eqx.nn.Linear
    beta: float = eqx.field(static=True)
    #: The normalization of every layer (a registered name), as in the network
    #: (:func:`spheresde.transformer.normalization`).
    norm: str = eqx.field(static=True, default="rms")

    @classmethod
    def create(cls, key: PRNGKeyArray, *, patches: int, patch_size: int, classes: int,
               d: int, layers: int, weights: Init, sigma: float = 1.0, beta: float = 1.0,
               dtype=jnp.float32, norm: str = "rms") -> TransformerClassifier:
        """A classifier at initialization (``weights``: see :func:`init_values`; ``norm``:
        the normalization of its layers, a registered name)."""
        normalization(norm)  # a name the network knows, checked before any work
        _checks.classifier(layers=layers, d=d, sigma=sigma, dtype=dtype, beta=beta,
                           patches=patches, patch_size=patch_size, classes=classes)
        k_embed, k_pos, k_values, k_head = jax.random.split(key, 4)
        eye = jnp.tile(jnp.eye(d, dtype=dtype), (layers, 1, 1))
        values = init_values(k_values, weights, layers, d, sigma, dtype)
        return cls(
            embed=eqx.nn.Linear(patch_size, d, key=k_embed, dtype=dtype),
            position=jax.random.normal(k_pos, (patches, d), dtype) / np.sqrt(d),
            values=jnp.broadcast_to(values, eye.shape), tied=jnp.asarray(len(values) == 1),
            queries=eye, keys=eye,
            head=eqx.nn.Linear(d, classes, key=k_head, dtype=dtype),
            beta=float(beta), norm=norm,
        )

    @property
    def layers(self) -> int:
        """Depth ``L``."""
        return self.queries.shape[0]

    def tokens(self, patches: Float[Array, "n p"], *, every_layer: bool = False) -> Array:
        """Unit tokens after the last layer ``(n, d)``, or after each ``(L + 1, n, d)``."""
        normalize = normalization(self.norm).normalize
        x = normalize(jax.vmap(self.embed)(patches) + self.position)
        # tied: the first matrix serves every layer and receives the sum of their gradients
        values = jnp.where(self.tied, jnp.broadcast_to(self.values[:1], self.values.shape),
                           self.values)
        step = residual_step(self.layers)

        def layer(x, vqk):
            V, Q, K = vqk
            x = normalize(x + step * attention(x, self.beta, Q, K, dense=True) @ V.T)
            return x, x if every_layer else None

        out, history = jax.lax.scan(layer, x, (values, self.queries, self.keys))
        return jnp.concatenate([x[None], history]) if every_layer else out

    def __call__(self, patches: Float[Array, "n p"]) -> Float[Array, " classes"]:
        return self.head(jnp.mean(self.tokens(patches), axis=0))


def classifier_loss(model: TransformerClassifier, images: Array, labels: Array) -> Array:
    """Mean cross-entropy of the logits of a batch ``(B, n, p)`` against integer labels."""
    logits = jax.vmap(model)(images)
    return jnp.mean(optax.softmax_cross_entropy_with_integer_labels(logits, labels))


@functools.lru_cache(maxsize=16)
def classifier_optimizer(lr: float, weight_decay: float,
                         total_steps: int) -> optax.GradientTransformation:
    """AdamW under a warm-up (5% of the steps) and cosine decay schedule.

    Cached: the same arguments give the same object, so :func:`train_epoch`, which takes
    it as a static argument, compiles once for all the runs of a sweep.
    """
    _checks.real("lr", lr, at_least=0.0)
    _checks.real("weight_decay", weight_decay, at_least=0.0)
    _checks.whole("total_steps", total_steps)
    schedule = optax.warmup_cosine_decay_schedule(
        0.0, lr, warmup_steps=max(1, total_steps // 20), decay_steps=max(2, total_steps))
    return optax.adamw(schedule, weight_decay=weight_decay)


def _epoch(model, opt_state, optim, images, labels, dataset, order):
    """One epoch of one run on training set ``dataset`` of ``images`` ``(S, N, n, p)``.

    The run's batches are gathered from the ``S`` sets inside each step, so that runs
    vmapped over ``dataset`` share one copy of the images instead of a copy each.
    """
    params, static = eqx.partition(model, eqx.is_inexact_array)

    def step(carry, batch):
        params, opt_state = carry
        loss, grads = jax.value_and_grad(
            lambda p: classifier_loss(eqx.combine(p, static), images[dataset, batch],
                                      labels[dataset, batch]))(params)
        updates, opt_state = optim.update(grads, opt_state, params)
        return (optax.apply_updates(params, updates), opt_state), loss

    (params, opt_state), losses = jax.lax.scan(step, (params, opt_state), order)
    return eqx.combine(params, static), opt_state, jnp.mean(losses)


@eqx.filter_jit
def train_epoch(model, opt_state, optim, images, labels, order):
    """One epoch of one run: a ``lax.scan`` of AdamW steps over the batches ``order``
    ``(steps, B)`` of ``images`` ``(N, n, p)``.

    Returns the model, the optimizer state and the mean training loss of the epoch.
    """
    _checks.real("images", images)
    return _epoch(model, opt_state, optim, images[None], labels[None], 0, order)


@eqx.filter_jit
def train_epochs(models, opt_states, optim, images, labels, datasets, orders):
    """One epoch of ``R`` runs at once, one compiled program: :func:`train_epoch` vmapped.

    ``models`` and ``opt_states`` are stacked along a leading axis of runs
    (:func:`stack_runs`); run ``r`` trains on set ``datasets[r]`` of ``images``
    ``(S, N, n, p)`` and ``labels`` ``(S, N)`` over its batches ``orders[r]``
    ``(steps, B)``. Returns the stacked models and states and the ``(R,)`` mean
    training losses. Each run's numbers are those of :func:`train_epoch` to float
    rounding (``tests/test_train.py`` states how close).
    """
    run = eqx.filter_vmap(_epoch, in_axes=(eqx.if_array(0), eqx.if_array(0), None, None, None,
                                           0, 0))
    return run(models, opt_states, optim, images, labels, datasets, orders)


def stack_runs(trees):
    """Pytrees of one structure (models, optimizer states) stacked into one, each array
    leaf gaining a leading axis of runs; for :func:`train_epochs`. Stacked by NumPy: an
    eager ``jnp.stack`` compiles a program for each leaf's shape and number of runs
    (20 programs, 1.9 s of the quick Figure 2's 73 s)."""
    return jax.tree.map(lambda *leaves: jnp.asarray(np.stack(leaves)), *trees)


class ClassifierEvaluation(NamedTuple):
    """Accuracy, loss and clustering of the output tokens on a set of images.

    ``token_cosine``: mean over images of the mean :math:`\\langle X_i, X_j\\rangle`,
    ``i != j``, of the output tokens (1: all tokens in one point); ``outcomes``: fractions
    of images whose output tokens are a single cluster, antipodal, undecided
    (:func:`spheresde.transformer.classify`).
    """

    accuracy: float
    loss: float
    token_cosine: float
    outcomes: tuple[float, float, float]


EVALUATION_CHUNK = 1000
"""Images evaluated per call of the compiled evaluation (memory: a chunk's tokens after
the last layer, ``chunk x n x d`` per model)."""


def _evaluation_sums(model, images, labels, tol, valid):
    """Hits, summed loss, summed token cosine and outcome counts of the images of one
    chunk where ``valid`` (the padding of a last chunk is not counted)."""
    tokens = jax.vmap(model.tokens)(images)
    logits = jax.vmap(model.head)(jnp.mean(tokens, axis=1))
    n = tokens.shape[1]
    gram = jnp.einsum("bid,bjd->bij", tokens, tokens)
    cosine = (jnp.sum(gram, axis=(1, 2)) - n) / (n * (n - 1))
    codes = classify(tokens, tol)

    def total(per_image):
        return jnp.sum(jnp.where(valid, per_image, 0))

    return jnp.stack([total(jnp.argmax(logits, -1) == labels),
                      total(optax.softmax_cross_entropy_with_integer_labels(logits, labels)),
                      total(cosine), *(total(codes == c) for c in range(3))])


_evaluate_chunk = eqx.filter_jit(_evaluation_sums)


@eqx.filter_jit
def _evaluate_chunks(models, images, labels, datasets, tol, valid):
    return eqx.filter_vmap(
        lambda model, k: _evaluation_sums(model, images[k], labels[k], tol, valid))(
        models, datasets)


def _evaluations(sums_of, count: int, chunk: int) -> list[ClassifierEvaluation]:
    """Totals of ``sums_of(index, valid)`` (``(..., 6)`` sums of the images ``index``
    where ``valid``) over the chunks of ``count`` images, as one
    :class:`ClassifierEvaluation` per leading index.

    Every chunk has ``min(chunk, count)`` images, the last one padded with copies of the
    last image that ``valid`` leaves out: one compiled program serves every chunk, and
    every set of images at least that large (the training set and the validation set of
    a run: 2 programs instead of 6 for the quick Figure 2, 3 s of its compiling)."""
    chunk = min(chunk, count)
    total = 0.0
    for start in range(0, count, chunk):
        index = np.arange(start, start + chunk)
        total = total + np.asarray(sums_of(np.minimum(index, count - 1), index < count),
                                   dtype=float)
    return [ClassifierEvaluation(t[0], t[1], t[2], tuple(float(f) for f in t[3:]))
            for t in np.atleast_2d(total / count)]


def evaluate_classifier(model: TransformerClassifier, images, labels, *, tol: float,
                        chunk: int = EVALUATION_CHUNK) -> ClassifierEvaluation:
    """:class:`ClassifierEvaluation` of ``model`` on ``images`` ``(N, n, p)``, by chunks."""
    _checks.real("tol", tol, at_least=0.0)
    _checks.whole("chunk", chunk)
    (out,) = _evaluations(
        lambda index, valid: _evaluate_chunk(model, images[index], labels[index], tol, valid),
        len(labels), chunk)
    return out


def evaluate_classifiers(models, images, labels, datasets, *, tol: float,
                         chunk: int = EVALUATION_CHUNK) -> list[ClassifierEvaluation]:
    """:func:`evaluate_classifier` of ``R`` stacked models at once (one compiled program),
    model ``r`` on set ``datasets[r]`` of ``images`` ``(S, N, n, p)`` and ``labels``
    ``(S, N)``; one :class:`ClassifierEvaluation` per model."""
    _checks.real("tol", tol, at_least=0.0)
    _checks.whole("chunk", chunk)
    return _evaluations(
        lambda index, valid: _evaluate_chunks(models, images[:, index], labels[:, index],
                                              datasets, tol, valid),
        labels.shape[1], chunk)


__all__ = ["INITS", "ClassifierEvaluation", "TransformerClassifier", "classifier_loss",
           "classifier_optimizer", "evaluate_classifier", "evaluate_classifiers", "init_values",
           "stack_runs", "train_epoch", "train_epochs"]
