"""A real vLLM engine behind one interface (``backend``: in-process ``vllm.LLM`` in
``offline``, an OpenAI-compatible server in ``http_backend``), replays of a log on it
(``replay``, ``chat_replay``), its Prometheus metrics (``metrics``), and the measurement
reports it yields (``report``; stored as passports by ``passport`` in ``tables``). vLLM is
imported only when an engine is built."""
