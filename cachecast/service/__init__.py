"""cachecast.service"""
