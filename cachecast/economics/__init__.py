"""Self-hosted economics: model geometry, accelerators, capacity, cost comparison."""
