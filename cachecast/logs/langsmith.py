"""LangSmith runs, as ``Client.list_runs`` / the runs API return them (one run per JSON
line, or a JSON list): ``{"id", "run_type", "start_time", "inputs", "outputs", "extra":
{"metadata", "invocation_params"}, "trace_id", ...}``.

A run of ``run_type`` ``llm`` is one model call (chains, tools, retrievers are not):

* model ``extra.metadata.ls_model_name`` (else ``invocation_params.model``), provider
  ``extra.metadata.ls_provider`` (LangChain's integration name: openai, anthropic,
  google_genai, bedrock, azure, ...);
* prompt ``inputs.messages`` (LangChain messages, serialized or as role/content dicts;
  one list per prompt) or ``inputs.prompts``; tools from ``invocation_params.tools``;
* usage ``usage_metadata`` (on the run, in ``outputs``, in ``extra.metadata`` or on the
  generated message): ``input_tokens`` includes ``input_token_details.cache_read`` and
  ``cache_creation`` (cachecast.logs.usage, "langchain"); else the provider's own
  ``outputs.llm_output.token_usage``; else the run's ``prompt_tokens`` /
  ``completion_tokens`` with ``prompt_token_details``;
* timestamp ``start_time``; session the thread (``extra.metadata.thread_id`` /
  ``session_id`` / ``conversation_id``), else the trace id.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from cachecast.core.errors import RecordFieldError
from cachecast.logs.canonical import iso_seconds, make_record, unrecorded_prompt
from cachecast.logs.messages import body_for, chat_messages, chat_tools, has_tool_calls, maybe_json
from cachecast.logs.providers import resolve_provider
from cachecast.logs.stream import Item, LogStream, each_record
from cachecast.logs.types import ObservedUsage
from cachecast.logs.usage import normalize_usage

RUN_TYPES = frozenset({"llm", "chain", "tool", "retriever", "embedding", "prompt", "parser"})


def fits(record: dict[str, Any]) -> bool:
    return record.get("run_type") in RUN_TYPES and "inputs" in record


def read(stream: LogStream) -> Iterator[Item]:
    return each_record(stream, lambda line, run: _run(stream, line, run))


def _dict(value: Any) -> dict[str, Any]:
    value = maybe_json(value)
    return value if isinstance(value, dict) else {}


def _run(stream: LogStream, line: int, run: Any) -> dict[str, Any] | None:
    if not isinstance(run, dict):
        raise RecordFieldError("<record>", "expected a run object")
    if run.get("run_type") != "llm":
        stream.skip("LangSmith run that is not an LLM call (chain, tool, ...)")
        return None
    if run.get("error") and not run.get("outputs"):
        stream.skip("LangSmith LLM run that failed (no output)")
        return None
    extra = _dict(run.get("extra"))
    metadata = _dict(extra.get("metadata"))
    params = _dict(extra.get("invocation_params"))
    outputs = _dict(run.get("outputs"))
    model = metadata.get("ls_model_name") or params.get("model") or params.get("model_name")
    provider = metadata.get("ls_provider")
    provider, model = resolve_provider(
        provider if isinstance(provider, str) else None, model if isinstance(model, str) else None
    )
    inputs = _dict(run.get("inputs"))
    body, complete = _body(inputs, params, provider, model)
    if body is None:
        body, complete = unrecorded_prompt(stream.source, line), False
    observed = _usage(run, outputs, metadata)
    start = run.get("start_time")
    session = next(
        (
            metadata[k]
            for k in ("thread_id", "session_id", "conversation_id")
            if isinstance(metadata.get(k), str)
        ),
        run.get("trace_id"),
    )
    return make_record(
        request=body,
        model=model,
        provider=provider,
        timestamp=None if start is None else iso_seconds(start, "start_time"),
        request_id=run.get("id") if isinstance(run.get("id"), str) else None,
        session=session if isinstance(session, str) else None,
        observed=observed,
        prompt_complete=complete,
    )


def _body(
    inputs: dict[str, Any], params: dict[str, Any], provider: str | None, model: str | None
) -> tuple[dict[str, Any] | None, bool]:
    messages = inputs.get("messages")
    tools = chat_tools(params.get("tools") or params.get("functions"))
    if isinstance(messages, list) and messages:
        chat = chat_messages(messages, "inputs.messages")
        complete = tools is not None or not has_tool_calls(chat)
        return body_for(provider, model, chat, tools), complete
    prompts = inputs.get("prompts")
    if isinstance(prompts, list) and prompts and all(isinstance(p, str) for p in prompts):
        body: dict[str, Any] = {"prompt": "\n".join(prompts)}
        return body, True
    return None, False


def _usage(
    run: dict[str, Any], outputs: dict[str, Any], metadata: dict[str, Any]
) -> ObservedUsage | None:
    for where, value in (
        ("usage_metadata", run.get("usage_metadata")),
        ("outputs.usage_metadata", outputs.get("usage_metadata")),
        ("extra.metadata.usage_metadata", metadata.get("usage_metadata")),
        ("outputs.generations[0][0].message.usage_metadata", _message_usage(outputs)),
    ):
        if isinstance(value, dict) and value:
            return normalize_usage(value, convention="langchain", path=where)
    llm_output = _dict(outputs.get("llm_output"))
    token_usage = llm_output.get("token_usage") or llm_output.get("usage")
    if isinstance(token_usage, dict) and token_usage:
        return normalize_usage(token_usage, path="outputs.llm_output.token_usage")
    if run.get("prompt_tokens") is not None or run.get("completion_tokens") is not None:
        usage = {
            "input_tokens": run.get("prompt_tokens"),
            "output_tokens": run.get("completion_tokens"),
            "input_token_details": _dict(run.get("prompt_token_details")),
        }
        return normalize_usage(usage, convention="langchain", path="<run>")
    return None


def _message_usage(outputs: dict[str, Any]) -> Any:
    generations = outputs.get("generations")
    while isinstance(generations, list) and generations:
        generations = generations[0]
    if not isinstance(generations, dict):
        return None
    message = _dict(generations.get("message"))
    kwargs = _dict(message.get("kwargs"))
    return kwargs.get("usage_metadata") or message.get("usage_metadata")
