"""The pass machinery beneath the use cases: how a log is read (``log_input``, ``prompt_sets``;
``log_passes``: read twice, as compare and fleet read it), which targets it is priced for
(``targets``), how a pass runs (``executors``: one process, or the ``ray`` subpackage on a Ray
cluster), how progress is reported (``progress``) and where per-request rows go
(``per_request``). Use cases in ``cachecast.usecases`` compose these; nothing here imports a
use case."""
