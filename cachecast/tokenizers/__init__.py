"""cachecast.tokenizers"""
