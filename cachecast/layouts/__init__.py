"""Prompt layouts: the layout format and its expansion, volatile spans, where two prompt sets
part (divergence), and the candidate changes with their diffs. ``cachecast.usecases.check`` and
``cachecast.usecases.suggest`` replay them under targets."""
