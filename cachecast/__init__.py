"""cachecast: prompt-cache cost and API-contract analyzer.

Data flows one way through the subpackages:
log -> ``tokenizers`` (tokens, segments, breakpoints) -> ``simulator`` (blocks, matcher, usage,
bill, report); ``contracts`` supplies the dated terms the bill is computed under; ``gpu_backend``
measures the same layouts on a real vLLM engine and models self-hosted economics; ``service``
exposes all of it over HTTP.
"""

__version__ = "0.1.0"
