"""cachecast.gpu_backend"""
