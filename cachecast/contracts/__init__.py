"""cachecast.contracts"""
