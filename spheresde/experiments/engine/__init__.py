"""The generic sweep engine: spec base classes, the store, the driver, the executors and
the dry-run planner; it knows nothing of the paper's experiments."""
