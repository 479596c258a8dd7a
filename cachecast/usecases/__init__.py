"""The application layer: one function per use case, a typed request in, a typed report out.

Every front end (the CLI in ``cachecast.cli``, the REST API in ``cachecast.service``, service
jobs, the Ray executor) is a thin adapter over these functions: it builds the request, calls
the use case, and renders or returns the report, whose JSON is ``report.model_dump(mode=
"json")`` everywhere. The use cases compose the domain packages (tokenizers, simulator,
contracts, economics, layouts, gpu_backend) and are the only place that does.

Use cases: ``estimate`` (bills of a log under dated contracts), ``simulate``, ``tokenize``,
``check`` and ``suggest`` (prompt layouts), ``capacity``, ``compare`` and ``fleet``
(self-hosted economics), ``measure`` (a real engine), ``inspect``, ``reconcile``, and the
contract store's list, show, history, import, export and audit (``contracts``).
"""
