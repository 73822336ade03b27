"""``solve_batch`` splitting its paths over several devices (here two CPU devices).

JAX fixes its device count when it first runs, so the two-device case runs in a fresh
interpreter; this process has one CPU device.
"""

import os
import subprocess
import sys
import textwrap

import jax.numpy as jnp
import jax.random as jr
import pytest

import spheresde

TWO_DEVICES = textwrap.dedent("""
    import jax
    jax.config.update("jax_num_cpu_devices", 2)
    jax.config.update("jax_enable_x64", True)
    import jax.numpy as jnp, jax.random as jr, numpy as np
    import spheresde
    sde = spheresde.transformer.transformer_sde(2.0, d=4)
    y0 = spheresde.sample_uniform(jr.key(0), (64, 2), 4)
    for brownian in ("unsafe", "weak"):
        run = lambda shard: spheresde.solve_batch(sde, y0, 0.0, 0.5, 0.01, key=jr.key(1),
                                                  brownian=brownian, shard=shard)
        split, whole = run(None), run(False)
        assert len(split.ys.sharding.device_set) == 2, split.ys.sharding
        assert len(whole.ys.sharding.device_set) == 1, whole.ys.sharding
        # the same draws on either layout: only the rounding may differ
        gap = float(jnp.max(jnp.abs(split.ys - whole.ys)))
        assert gap < 1e-12, gap
        print(brownian, "gap", gap)
    try:
        spheresde.solve_batch(sde, y0[:63], 0.0, 0.5, 0.01, key=jr.key(1), shard=True)
    except ValueError as err:
        assert "divide the 63 paths" in str(err), err
    else:
        raise AssertionError("shard=True with 63 paths on 2 devices did not raise")
    print("ok")
""")


@pytest.mark.slow  # a subprocess with two CPU devices (~20 s)
def test_paths_split_over_two_devices_give_the_same_answer():
    env = {**os.environ, "JAX_PLATFORMS": "cpu"}
    proc = subprocess.run([sys.executable, "-c", TWO_DEVICES], capture_output=True, text=True,
                          env=env, timeout=300)
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert proc.stdout.strip().endswith("ok"), proc.stdout


def test_shard_true_on_one_device_is_refused():
    y0 = spheresde.sample_uniform(jr.key(0), (8, 2), 4)
    sde = spheresde.transformer.transformer_sde(2.0, d=4)
    with pytest.raises(ValueError, match="needs several devices"):
        spheresde.solve_batch(sde, y0, 0.0, 0.1, 0.01, key=jr.key(1), shard=True)
    with pytest.raises(ValueError, match="stacked form"):
        spheresde.solve_batch(sde, y0, 0.0, 0.1, 0.01, key=jr.key(1), shard=True,
                              stacked=False)
    ys = spheresde.solve_batch(sde, y0, 0.0, 0.1, 0.01, key=jr.key(1), shard=None).ys
    assert bool(jnp.all(jnp.isfinite(ys)))
