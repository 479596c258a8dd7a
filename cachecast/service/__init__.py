"""The REST API: the FastAPI app (``app``), one thin router per resource (``routers``), jobs in
the shared database run by the API's threads, worker processes or Ray (``jobs``, ``worker``,
``ray_jobs``), settings, limits, auth and problem responses. Routers build use-case requests
and return the use cases' reports; they never assemble the pipeline."""
