"""cachecast.simulator"""
