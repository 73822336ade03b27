"""Splitting a batch over the local devices: one helper for every batched kernel.

``solve_batch(shard=...)`` splits its stacked paths and ``two_token.simulate_rho`` its
lanes; both are elementwise over that axis, so each device can run its share on its
own core or chip. The random draws do not depend on the split (JAX's partitionable
Threefry), only the rounding of the arithmetic may.
"""

from __future__ import annotations

import jax
import numpy as np
from jax.sharding import Mesh, NamedSharding, PartitionSpec


def leading_axis_sharding(size: int, axis_name: str) -> NamedSharding | None:
    """A sharding that splits a leading axis of length ``size`` over the local devices.

    ``None`` when there is a single device or the devices do not divide ``size`` (an
    uneven split would pad every step). Several devices are several GPUs, or CPU
    cores made devices with ``jax.config.update("jax_num_cpu_devices", n)`` (or
    ``XLA_FLAGS=--xla_force_host_platform_device_count=n``) before JAX first runs.
    ``axis_name`` names the mesh axis (it shows in profiles, not in the results).
    """
    devices = jax.local_devices()
    if len(devices) < 2 or size % len(devices):
        return None
    return NamedSharding(Mesh(np.array(devices), (axis_name,)), PartitionSpec(axis_name))


__all__ = ["leading_axis_sharding"]
