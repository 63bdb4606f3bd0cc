"""Other providers: the OpenAI Chat Completions format, translated at the edge, and presets.

Inside the agent every message is in the Anthropic Messages format (the canonical
one). Most other providers (OpenAI, DeepSeek, Qwen, Kimi, GLM, Ollama, vLLM) speak
OpenAI's Chat Completions format instead, so the client translates at the border:
the request on its way out, the answer on its way in, and a stream chunk by chunk.
The loop, the agent and the history never see the difference.

The two formats say the same things in different places:

    canonical (Anthropic)                      OpenAI Chat Completions
    system="..."                               {"role": "system", "content": "..."} first
    assistant text + tool_use blocks           assistant "content" + "tool_calls"
    tool_use input (a dict)                    function.arguments (a JSON *string*)
    one user turn of tool_result blocks        one {"role": "tool", "tool_call_id"} message each
    tool_result is_error: true                 (no flag) the text starts with "Error: "
    thinking block                             "reasoning_content" (DeepSeek, Qwen, Kimi, GLM)
    tools: name, description, input_schema     {"type": "function", "function": {name, description, parameters}}
    tool_choice auto / any / tool / none       "auto" / "required" / {"type": "function", ...} / "none"
    disable_parallel_tool_use                  parallel_tool_calls: false
    stop_reason end_turn, max_tokens,          finish_reason stop, length,
                tool_use, refusal                            tool_calls, content_filter
    usage input_tokens, output_tokens,         usage prompt_tokens (cached included), completion_tokens,
          cache_read_input_tokens                    prompt_tokens_details.cached_tokens

What a round trip (canonical -> OpenAI -> canonical) preserves, exactly: roles and
order; text; tool calls (id, name, input); tool results (id, text, order); thinking
text; system text; tools and tool_choice. What it normalises: content given as one
text block comes back as the plain string (the API's shorthand for the same thing)
and an assistant's plain string as one text block; an error result's text gains the
"Error: " prefix if it lacked it, and any result whose text starts with "Error: "
comes back marked is_error; a user message right after tool results joins their
turn (the API merges consecutive user turns anyway); a system given as blocks comes
back as one string. What it drops: cache_control, citations, a thinking block's
signature, redacted_thinking and server-tool blocks (none has an OpenAI form).

Sections: 1. presets; 2. requests out (canonical -> OpenAI) and back (for tests and
for anyone translating a history); 3. responses in; 4. streams in; 5. errors;
6. the OpenAI format, the object `ClientCore` asks about paths, headers and all the above
(the Messages API's own, `AnthropicFormat`, is the client's: `clientcore.py`).
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

from miniagent.clientcore import AnthropicFormat
from miniagent.errors import MalformedResponseError
from miniagent.tools import UNPARSED_ARGUMENTS

# --- 1. presets ---------------------------------------------------------------------------
#
# Choosing a provider is configuration: connect(provider="deepseek"), or MINIAGENT_PROVIDER=deepseek.
# Each fact below comes from the provider's own documentation, the page named in `docs`, read on the
# date the comment gives (2026-11-30 where it gives none); where that page could only be read through
# a copy, or a fact only on a third party's page, the comment says so. Keys are per region: a key
# made on a provider's China platform is refused (401) by its international one and the other way
# round, so such presets name their region and their twin (the preset for the other region's key).


@dataclass(frozen=True)
class Preset:
    """Where a provider lives and how to reach it: everything that differs between two providers."""

    base_url: str
    key_env: str | None   # the variable holding the key; None: a server that takes none
    model: str | None     # the default model (model= or MINIAGENT_MODEL override it); None: the client's default
    format: str           # "openai" (Chat Completions) or "anthropic" (the Messages API)
    docs: str             # the provider's own page(s) these facts come from
    auth: str = "bearer"  # the key as "authorization: Bearer" or as "x-api-key" (Anthropic's style)
    base_env: str | None = None  # a variable that overrides base_url, as the official SDKs read it
    max_tokens_field: str = "max_tokens"  # OpenAI's newer models want "max_completion_tokens"
    key_optional: bool = False  # a local server: live without a key
    region: str | None = None  # where its keys are made ("mainland China", "international")
    twin: str | None = None    # the preset for a key made in the other region
    tool_choices: tuple[str, ...] | None = None  # the canonical tool_choice types it accepts; None: all

    def wire_format(self) -> AnthropicFormat | OpenAIFormat:
        if self.format == "anthropic":
            return AnthropicFormat(auth=self.auth)
        return OpenAIFormat(max_tokens_field=self.max_tokens_field, tool_choices=self.tool_choices)


CN, INTL = "mainland China", "international"

PRESETS: dict[str, Preset] = {
    # The default: the Messages API itself. x-api-key and anthropic-version, as the article does.
    "anthropic": Preset("https://api.anthropic.com", "ANTHROPIC_API_KEY", None, "anthropic",
                        "https://docs.claude.com/en/api/overview", auth="x-api-key", base_env="ANTHROPIC_BASE_URL"),
    # The SDK's default base_url is https://api.openai.com/v1 (wire-format.md §2.1); GPT-5 and o-series
    # models refuse max_tokens: "use max_completion_tokens instead" (the API reference, openai-openapi spec).
    "openai": Preset("https://api.openai.com/v1", "OPENAI_API_KEY", "gpt-5-mini", "openai",
                     "https://platform.openai.com/docs/api-reference/chat/create",
                     base_env="OPENAI_BASE_URL", max_tokens_field="max_completion_tokens"),
    # DeepSeek (read 2026-12-02, the pricing page in Chinese and English): "BASE URL (OpenAI 格式)
    # https://api.deepseek.com", "BASE URL (Anthropic 格式) https://api.deepseek.com/anthropic"; "模型名请使用
    # deepseek-flash" (DeepSeek-V4.1-Flash; deepseek-v4-pro the larger one); the curl example reads
    # DEEPSEEK_API_KEY. One platform, one key, whatever the region.
    "deepseek": Preset("https://api.deepseek.com", "DEEPSEEK_API_KEY", "deepseek-flash", "openai",
                       "https://api-docs.deepseek.com/ and https://api-docs.deepseek.com/quick_start/pricing"),
    # Its Anthropic API: "x-api-key: Fully Supported", anthropic-version ignored; an unknown model name is
    # mapped to deepseek-v4-flash (read 2026-12-02).
    "deepseek-anthropic": Preset("https://api.deepseek.com/anthropic", "DEEPSEEK_API_KEY", "deepseek-flash",
                                 "anthropic", "https://api-docs.deepseek.com/guides/anthropic_api", auth="x-api-key"),
    # Model Studio (DashScope, 阿里云百炼) compatible mode: Singapore (international) and Beijing endpoints;
    # keys are per region; qwen-plus is in the page's list of models the compatible mode serves.
    "qwen": Preset("https://dashscope-intl.aliyuncs.com/compatible-mode/v1", "DASHSCOPE_API_KEY", "qwen-plus",
                   "openai", "https://www.alibabacloud.com/help/en/model-studio/compatibility-of-openai-with-dashscope",
                   region=INTL + " (Singapore)", twin="qwen-cn"),
    "qwen-cn": Preset("https://dashscope.aliyuncs.com/compatible-mode/v1", "DASHSCOPE_API_KEY", "qwen-plus",
                      "openai", "https://www.alibabacloud.com/help/en/model-studio/compatibility-of-openai-with-dashscope",
                      region=CN + " (Beijing)", twin="qwen"),
    # Its Anthropic API (read 2026-12-02): "ANTHROPIC_API_KEY(或 ANTHROPIC_AUTH_TOKEN):替换为百炼 API Key",
    # ANTHROPIC_BASE_URL https://dashscope.aliyuncs.com/apps/anthropic, "本文档仅适用于中国大陆版(北京地域)"; the
    # international page: https://dashscope-intl.aliyuncs.com/apps/anthropic, "only to the International
    # Edition (Singapore region)"; its example uses model qwen-plus. (Newer workspace domains,
    # {WorkspaceId}.cn-beijing.maas.aliyuncs.com, exist; "the existing domain remains fully functional".)
    "qwen-anthropic": Preset("https://dashscope-intl.aliyuncs.com/apps/anthropic", "DASHSCOPE_API_KEY", "qwen-plus",
                             "anthropic", "https://www.alibabacloud.com/help/en/model-studio/anthropic-api-messages",
                             auth="x-api-key", region=INTL + " (Singapore)", twin="qwen-cn-anthropic"),
    "qwen-cn-anthropic": Preset("https://dashscope.aliyuncs.com/apps/anthropic", "DASHSCOPE_API_KEY", "qwen-plus",
                                "anthropic", "https://help.aliyun.com/zh/model-studio/anthropic-api-messages",
                                auth="x-api-key", region=CN + " (Beijing)", twin="qwen-anthropic"),
    # Kimi's quickstart: base_url https://api.moonshot.ai/v1, $MOONSHOT_API_KEY, model kimi-k2.6 (its flagship
    # on 2026-12-02: the model lists put kimi-k2.6 first and retire the kimi-k2-*-preview ids; kimi-k2.7-code
    # is its coding model); the China platform (platform.moonshot.cn, its own keys) is api.moonshot.cn.
    "kimi": Preset("https://api.moonshot.ai/v1", "MOONSHOT_API_KEY", "kimi-k2.6", "openai",
                   "https://platform.kimi.ai/docs/api/quickstart", region=INTL, twin="kimi-cn"),
    "kimi-cn": Preset("https://api.moonshot.cn/v1", "MOONSHOT_API_KEY", "kimi-k2.6", "openai",
                      "https://moonshotai.github.io/kimi-cli/en/configuration/providers.html",
                      region=CN, twin="kimi"),
    # Kimi's overview says its API "is compatible with both the OpenAI and Anthropic APIs"; its Claude Code
    # guide sets ANTHROPIC_BASE_URL=https://api.moonshot.ai/anthropic and the key as ANTHROPIC_AUTH_TOKEN
    # (sent as Bearer). The China twin, https://api.moonshot.cn/anthropic, was read (2026-12-02) only in
    # users' Claude Code settings and scripts, not on a Moonshot page.
    "kimi-anthropic": Preset("https://api.moonshot.ai/anthropic", "MOONSHOT_API_KEY", "kimi-k2.6", "anthropic",
                             "https://platform.kimi.ai/docs/overview", region=INTL, twin="kimi-cn-anthropic"),
    "kimi-cn-anthropic": Preset("https://api.moonshot.cn/anthropic", "MOONSHOT_API_KEY", "kimi-k2.6", "anthropic",
                                "https://platform.moonshot.cn/docs/overview", region=CN, twin="kimi-anthropic"),
    # Zhipu's BigModel (China): "https://open.bigmodel.cn/api/paas/v4/", "Authorization: Bearer"; ZHIPUAI_API_KEY
    # is the variable its SDK reads. The default is glm-4.7-flash (read 2026-12-02): BigModel lists it among
    # its free models (docs.bigmodel.cn/cn/guide/models/free/glm-4.7-flash), "30B 级", tuned for tool use; a
    # classroom pays nothing. GLM-5 is the flagship (set MINIAGENT_MODEL for it).
    # The two claims, checked 2026-12-02. (1) "tool_choice only auto": no Zhipu page read says so, but Z.ai
    # answers any other value with HTTP 400 "Tool choice must be auto" (reported with the request and the
    # error body in vectorize-io/hindsight#4246 and onyx-dot-app/onyx#14192, GLM-5.3 through OpenRouter), and
    # a Chinese summary of BigModel's docs says "tool_choice 仅支持 auto": so tool_choices=("auto",), and
    # any other tool_choice is refused here, saying why, before it is sent. (2) "drops stream_options":
    # nothing found either way; the translator reads a stream's usage from whichever chunk carries it, so
    # a server that ignores stream_options loses nothing, and stream_options is still sent.
    "glm": Preset("https://open.bigmodel.cn/api/paas/v4", "ZHIPUAI_API_KEY", "glm-4.7-flash", "openai",
                  "https://docs.bigmodel.cn/cn/guide/develop/http/introduction and "
                  "https://docs.bigmodel.cn/cn/guide/models/free/glm-4.7-flash", region=CN, twin="zai",
                  tool_choices=("auto",)),
    # Z.ai (international GLM): https://api.z.ai/api/paas/v4, Bearer; its Claude Code page (read through a
    # copy) sets ANTHROPIC_BASE_URL=https://api.z.ai/api/anthropic and ANTHROPIC_AUTH_TOKEN. BigModel's twin,
    # open.bigmodel.cn/api/anthropic, was seen only in users' Claude Code settings, not on a Zhipu page.
    "glm-anthropic": Preset("https://open.bigmodel.cn/api/anthropic", "ZHIPUAI_API_KEY", "glm-4.7-flash", "anthropic",
                            "https://docs.z.ai/devpack/tool/claude", region=CN, twin="zai-anthropic"),
    "zai": Preset("https://api.z.ai/api/paas/v4", "ZAI_API_KEY", "glm-4.6", "openai",
                  "https://docs.z.ai/api-reference/introduction", region=INTL, twin="glm", tool_choices=("auto",)),
    "zai-anthropic": Preset("https://api.z.ai/api/anthropic", "ZAI_API_KEY", "glm-4.6", "anthropic",
                            "https://docs.z.ai/devpack/tool/claude", region=INTL, twin="glm-anthropic"),
    # 火山方舟 (Volcengine Ark, 豆包), read 2026-12-02: base URL https://ark.cn-beijing.volces.com/api/v3 (Chat
    # Completions), an API key from the Ark console as Bearer, ARK_API_KEY in its SDK's examples. Its quirk:
    # `model` is a model id (doubao-seed-1-6-251015, after the model is activated, 开通, in the console) or
    # the id of an inference endpoint of your own (推理接入点, "ep-2025...") : MINIAGENT_MODEL=ep-... works as is.
    # The model id is from Ark's model list as copies of it give it (Mastra, an Ark reseller's reference).
    "ark": Preset("https://ark.cn-beijing.volces.com/api/v3", "ARK_API_KEY", "doubao-seed-1-6-251015", "openai",
                  "https://www.volcengine.com/docs/82379/1399008 and https://www.volcengine.com/docs/82379/1330310",
                  region=CN),
    # 硅基流动 (SiliconFlow), read 2026-12-02: "base_url=\"https://api.siliconflow.cn/v1\"", the key from
    # cloud.siliconflow.cn as Bearer, "支持 OpenAI 相关的大多数参数"; the international platform
    # (cloud.siliconflow.com, its own accounts and keys): https://api.siliconflow.com/v1. SILICONFLOW_API_KEY is
    # the name tools use (its docs name no variable). Qwen/Qwen3-8B: free on siliconflow.cn and with function
    # calling, per third-party catalogues (LobeHub's, a Volcengine skill page); the docs page read lists none.
    "siliconflow": Preset("https://api.siliconflow.cn/v1", "SILICONFLOW_API_KEY", "Qwen/Qwen3-8B", "openai",
                          "https://docs.siliconflow.cn/cn/userguide/quickstart", region=CN, twin="siliconflow-intl"),
    "siliconflow-intl": Preset("https://api.siliconflow.com/v1", "SILICONFLOW_API_KEY", "Qwen/Qwen3-8B", "openai",
                               "https://docs.siliconflow.com/en/userguide/quickstart", region=INTL, twin="siliconflow"),
    # MiniMax, read 2026-12-02. OpenAI format: OPENAI_BASE_URL=https://api.minimax.io/v1 (international),
    # https://api.minimaxi.com/v1 (China); Anthropic format: https://api.minimax.io/anthropic and
    # https://api.minimaxi.com/anthropic, the key as ANTHROPIC_API_KEY (x-api-key). MiniMax-M2.7 is in both
    # sites' lists (the international one also lists MiniMax-M3). Its quirk, interleaved thinking: "in multi-turn
    # function call conversations, the complete model response must be appended to the conversation history";
    # over Chat Completions its thinking comes inside `content` as <think>...</think> (kept, and so sent back,
    # as text), or in `reasoning_details` with reasoning_split=True (read, and sent back, as a thinking block).
    # MINIMAX_API_KEY is the variable its SDK integrations read (Vercel's, AgentScope's).
    "minimax": Preset("https://api.minimax.io/v1", "MINIMAX_API_KEY", "MiniMax-M2.7", "openai",
                      "https://platform.minimax.io/docs/api-reference/text-openai-api", region=INTL, twin="minimax-cn"),
    "minimax-cn": Preset("https://api.minimaxi.com/v1", "MINIMAX_API_KEY", "MiniMax-M2.7", "openai",
                         "https://platform.minimaxi.com/docs/api-reference/text-openai-api", region=CN, twin="minimax"),
    "minimax-anthropic": Preset("https://api.minimax.io/anthropic", "MINIMAX_API_KEY", "MiniMax-M2.7", "anthropic",
                                "https://platform.minimax.io/docs/api-reference/text-anthropic-api", auth="x-api-key",
                                region=INTL, twin="minimax-cn-anthropic"),
    "minimax-cn-anthropic": Preset("https://api.minimaxi.com/anthropic", "MINIMAX_API_KEY", "MiniMax-M2.7", "anthropic",
                                   "https://platform.minimaxi.com/docs/api-reference/text-anthropic-api",
                                   auth="x-api-key", region=CN, twin="minimax-anthropic"),
    # 百度千帆 (Qianfan), read 2026-12-02: "需要配置的base_url如下: https://qianfan.baidubce.com/v2", "需要在API Key前面
    #加上Bearer" (keys look like bce-v3/ALTAK-...); its Anthropic API: https://qianfan.baidubce.com/anthropic,
    # x-api-key, "全量 Chat 对话接口都兼容". deepseek-v3.2 is the model of that page's example; QIANFAN_API_KEY
    # is the name tools use (Baidu's pages name no variable).
    "qianfan": Preset("https://qianfan.baidubce.com/v2", "QIANFAN_API_KEY", "deepseek-v3.2", "openai",
                      "https://cloud.baidu.com/doc/qianfan/s/Hmh4suq26", region=CN),
    "qianfan-anthropic": Preset("https://qianfan.baidubce.com/anthropic", "QIANFAN_API_KEY", "deepseek-v3.2",
                                "anthropic", "https://cloud.baidu.com/doc/qianfan-docs/s/6mh3e6gjp",
                                auth="x-api-key", region=CN),
    # Local servers. Ollama: base_url http://localhost:11434/v1/, "api_key='ollama', # required but ignored";
    # its Anthropic compatibility: ANTHROPIC_BASE_URL=http://localhost:11434, ANTHROPIC_AUTH_TOKEN.
    "ollama": Preset("http://localhost:11434/v1", None, "gpt-oss:20b", "openai",
                     "https://docs.ollama.com/api/openai-compatibility", key_optional=True),
    "ollama-anthropic": Preset("http://localhost:11434", None, "qwen3-coder", "anthropic",
                               "https://docs.ollama.com/api/anthropic-compatibility", key_optional=True),
    # llama.cpp's own server (`llama-server -m MODEL.gguf --jinja`): both formats on one port, /v1/messages
    # and /v1/chat/completions; a key only if started with --api-key. `make lab-local` starts one with the
    # course's small model (scripts/local_model.py), named by --alias, and sets MINIAGENT_BASE_URL.
    "llamacpp": Preset("http://127.0.0.1:8080", "LLAMACPP_API_KEY", "smollm2-135m-instruct", "anthropic",
                       "https://github.com/ggml-org/llama.cpp/blob/master/tools/server/README.md",
                       auth="x-api-key", key_optional=True),
    "llamacpp-openai": Preset("http://127.0.0.1:8080/v1", "LLAMACPP_API_KEY", "smollm2-135m-instruct", "openai",
                              "https://github.com/ggml-org/llama.cpp/blob/master/tools/server/README.md",
                              key_optional=True),
    # vLLM: `vllm serve MODEL --api-key ...` then base_url http://localhost:8000/v1; the key is needed only if
    # the server was started with one; the model is whatever it serves (set MINIAGENT_MODEL).
    "vllm": Preset("http://localhost:8000/v1", "VLLM_API_KEY", "NousResearch/Meta-Llama-3-8B-Instruct", "openai",
                   "https://docs.vllm.ai/en/latest/serving/openai_compatible_server.html", key_optional=True),
}


def preset(name: str) -> Preset:
    """The preset called `name`; ValueError listing the known ones otherwise."""
    if name not in PRESETS:
        raise ValueError(f"unknown provider {name!r}; choose one of: {', '.join(PRESETS)}")
    return PRESETS[name]


# --- 2. requests: canonical -> OpenAI, and back --------------------------------------------

ERROR_PREFIX = "Error: "  # OpenAI has no is_error flag: an error result says so in its text
STOP_REASONS = {"stop": "end_turn", "length": "max_tokens", "tool_calls": "tool_use",
                "function_call": "tool_use", "content_filter": "refusal"}
FINISH_REASONS = {"end_turn": "stop", "stop_sequence": "stop", "max_tokens": "length",
                  "tool_use": "tool_calls", "refusal": "content_filter"}


def to_openai_request(body: dict, *, max_tokens_field: str = "max_tokens",
                      tool_choices: tuple[str, ...] | None = None) -> dict:
    """A canonical request body (what `ClientCore.body` builds) as a Chat Completions body.

    Fields with a translation are translated; any other field passes through unchanged,
    so provider extras (`reasoning_effort`, DeepSeek's `thinking`, Qwen's
    `enable_thinking`, vLLM's `top_k`) are one keyword argument of `create` away.
    `tool_choices` (a preset's): the tool_choice types the provider accepts; another is a
    ValueError here, saying so, rather than the provider's 400; "auto", the default
    whenever tools are sent, is then left out.
    """
    out: dict[str, Any] = {"model": body["model"],
                           "messages": to_openai_messages(body["messages"], body.get("system"))}
    for key, value in body.items():
        if key in ("model", "messages", "system"):
            continue
        if key == "max_tokens":
            out[max_tokens_field] = value
        elif key == "tools":
            out["tools"] = to_openai_tools(value)
        elif key == "tool_choice":
            out.update(_accepted_tool_choice(value, tool_choices))
        elif key == "stop_sequences":
            out["stop"] = value
        elif key == "metadata":
            if isinstance(value, dict) and value.get("user_id"):
                out["user"] = value["user_id"]
        elif key == "stream":
            out["stream"] = value
            if value:
                out["stream_options"] = {"include_usage": True}  # else a stream reports no usage
        else:
            out[key] = value
    return out


def to_openai_messages(messages: list[dict], system: str | list | None = None) -> list[dict]:
    """The canonical history (and system prompt) as Chat Completions messages."""
    out: list[dict] = []
    if system:
        out.append({"role": "system", "content": system if isinstance(system, str) else _joined_text(system)})
    for message in messages:
        if message["role"] == "assistant":
            out.append(_assistant_message(message["content"]))
        else:
            out.extend(_user_messages(message["content"]))
    return out


def _user_messages(content: str | list) -> list[dict]:
    """A user turn: one `tool` message per tool_result (in order), then the rest as a user message."""
    if isinstance(content, str):
        return [{"role": "user", "content": content}]
    results = [b for b in content if b.get("type") == "tool_result"]
    rest = [b for b in content if b.get("type") != "tool_result"]
    out = [{"role": "tool", "tool_call_id": b["tool_use_id"], "content": _result_content(b)} for b in results]
    if rest:
        out.append({"role": "user", "content": _parts(rest)})
    return out


def _result_content(block: dict) -> str | list:
    """A tool_result's content as a tool message's: text, with "Error: " in front of an error."""
    content = block.get("content", "")
    if isinstance(content, list):
        content = [b if b.get("type") == "text" else
                   {"type": "text", "text": f"[a {b.get('type')} block: a tool message carries text only]"}
                   for b in content]
        content = _parts(content) if content else ""
    if block.get("is_error"):
        if isinstance(content, str) and not content.startswith(ERROR_PREFIX):
            content = ERROR_PREFIX + content
        elif isinstance(content, list) and not content[0]["text"].startswith(ERROR_PREFIX):
            content = [{"type": "text", "text": ERROR_PREFIX + content[0]["text"]}] + content[1:]
    return content


def _parts(blocks: list[dict]) -> str | list:
    """Content blocks as OpenAI content: one text block is a plain string, else a list of parts."""
    if len(blocks) == 1 and blocks[0].get("type") == "text":
        return blocks[0]["text"]
    return [_part(b) for b in blocks]


def _part(block: dict) -> dict:
    kind = block.get("type")
    if kind == "text":
        return {"type": "text", "text": block["text"]}
    if kind == "image":
        source = block.get("source") or {}
        url = source.get("url") if source.get("type") == "url" else \
            f"data:{source.get('media_type')};base64,{source.get('data')}"
        return {"type": "image_url", "image_url": {"url": url}}
    raise ValueError(f"a {kind!r} block has no form in the OpenAI Chat Completions format")


def _assistant_message(content: str | list) -> dict:
    """An assistant turn: its text as `content`, thinking as `reasoning_content`, tool_use as `tool_calls`."""
    if isinstance(content, str):
        return {"role": "assistant", "content": content}
    texts = [b for b in content if b.get("type") == "text"]
    calls = [b for b in content if b.get("type") == "tool_use"]
    thinking = "".join(b.get("thinking", "") for b in content if b.get("type") == "thinking")
    message: dict[str, Any] = {"role": "assistant", "content": _parts(texts) if texts else (None if calls else "")}
    if thinking:
        message["reasoning_content"] = thinking  # DeepSeek: must come back after a turn with tool calls
    if calls:
        message["tool_calls"] = [{"id": b["id"], "type": "function",
                                  "function": {"name": b["name"], "arguments": _arguments_text(b["input"])}}
                                 for b in calls]
    return message


def _arguments_text(arguments: dict) -> str:
    return json.dumps(arguments, ensure_ascii=False)


def _joined_text(blocks: list) -> str:
    return "\n".join(b.get("text", "") for b in blocks if isinstance(b, dict) and b.get("type") == "text")


def to_openai_tools(tools: list[dict]) -> list[dict]:
    """Tool schemas as function tools. A server tool (web search and the like) has no such form."""
    out = []
    for tool in tools:
        if "input_schema" not in tool:
            raise ValueError(f"tool {tool.get('name')!r} (type {tool.get('type')!r}) is a server tool of the "
                             "Messages API; the OpenAI Chat Completions format has no form for it")
        function = {"name": tool["name"], "description": tool.get("description"), "parameters": tool["input_schema"]}
        if "strict" in tool:
            function["strict"] = tool["strict"]
        out.append({"type": "function", "function": {k: v for k, v in function.items() if v is not None}})
    return out


def to_openai_tool_choice(choice: dict) -> dict:
    """{"tool_choice": ...} and, for disable_parallel_tool_use, {"parallel_tool_calls": False}."""
    kind = choice.get("type")
    out: dict[str, Any] = {"tool_choice": {"auto": "auto", "any": "required", "none": "none"}.get(kind)}
    if kind == "tool":
        out["tool_choice"] = {"type": "function", "function": {"name": choice["name"]}}
    if out["tool_choice"] is None:
        raise ValueError(f"tool_choice type {kind!r} has no OpenAI form")
    if choice.get("disable_parallel_tool_use"):
        out["parallel_tool_calls"] = False
    return out


def _accepted_tool_choice(choice: dict, accepted: tuple[str, ...] | None) -> dict:
    """to_openai_tool_choice, for a provider that accepts only some tool_choice types (None: all)."""
    out = to_openai_tool_choice(choice)
    if accepted is None:
        return out
    kind = choice.get("type")
    if kind not in accepted:
        raise ValueError(f"tool_choice type {kind!r} is refused by this provider, which accepts "
                         f"{' or '.join(repr(k) for k in accepted)} only (its preset's tool_choices); "
                         "leave tool_choice out, or say in the prompt which tool to call")
    if out.get("tool_choice") == "auto":
        del out["tool_choice"]  # the default whenever tools are sent
    return out


def from_openai_messages(messages: list[dict]) -> tuple[str | None, list[dict]]:
    """Chat Completions messages back to (system, canonical history): the inverse of `to_openai_messages`."""
    system = [m["content"] for m in messages if m["role"] in ("system", "developer")]
    out: list[dict] = []
    for message in messages:
        role = message["role"]
        if role == "assistant":
            out.append({"role": "assistant", "content": _assistant_blocks(message)})
        elif role in ("tool", "user"):
            content = [_tool_result(message)] if role == "tool" else _from_parts(message["content"])
            if _results_turn(out):  # tool results, and the text that followed them: one canonical turn
                out[-1]["content"].extend([{"type": "text", "text": content}] if isinstance(content, str) else content)
            else:
                out.append({"role": "user", "content": content})
    joined = "\n".join(s if isinstance(s, str) else _joined_text(s) for s in system)
    return (joined or None), out


def _results_turn(out: list[dict]) -> bool:
    """Whether the last canonical message is a user turn of tool results (more may join it)."""
    return bool(out) and out[-1]["role"] == "user" and isinstance(out[-1]["content"], list) \
        and any(b["type"] == "tool_result" for b in out[-1]["content"])


def _tool_result(message: dict) -> dict:
    content = _from_parts(message.get("content") or "")
    text = content if isinstance(content, str) else (content[0].get("text", "") if content else "")
    block: dict[str, Any] = {"type": "tool_result", "tool_use_id": message["tool_call_id"], "content": content}
    if text.startswith(ERROR_PREFIX):
        block["is_error"] = True
    return block


def _from_parts(content: str | list) -> str | list:
    """OpenAI content (a string or parts) as canonical content (a string or blocks)."""
    if isinstance(content, str):
        return content
    blocks = []
    for part in content:
        if part.get("type") == "image_url":
            url = part["image_url"]["url"]
            if url.startswith("data:") and ";base64," in url:
                media, data = url[5:].split(";base64,", 1)
                blocks.append({"type": "image", "source": {"type": "base64", "media_type": media, "data": data}})
            else:
                blocks.append({"type": "image", "source": {"type": "url", "url": url}})
        else:
            blocks.append({"type": "text", "text": part.get("text", "")})
    return blocks


def _assistant_blocks(message: dict) -> list[dict]:
    """An OpenAI assistant message as canonical blocks: thinking, text, then tool calls."""
    blocks: list[dict] = []
    reasoning = message.get("reasoning_content") or message.get("reasoning")  # "reasoning": Ollama, newer vLLM
    if isinstance(reasoning, str) and reasoning:
        blocks.append({"type": "thinking", "thinking": reasoning})
    content = message.get("content")
    if isinstance(content, list):
        blocks += [{"type": "text", "text": p.get("text") or p.get("refusal") or ""} for p in content]
    elif isinstance(content, str) and content:
        blocks.append({"type": "text", "text": content})
    elif isinstance(message.get("refusal"), str) and message["refusal"]:
        blocks.append({"type": "text", "text": message["refusal"]})
    for i, call in enumerate(message.get("tool_calls") or []):
        blocks.append(_tool_use(call, i))
    return blocks


def _tool_use(call: dict, position: int) -> dict:
    function = call.get("function") or {}
    given = call.get("id")
    return {"type": "tool_use", "id": given if isinstance(given, str) and given else f"call_{position}",
            "name": function.get("name"), "input": parse_arguments(function.get("arguments"))}


def parse_arguments(arguments: Any) -> dict:
    """A tool call's arguments (a JSON string) as the dict a tool_use block holds.

    Models do produce broken JSON. That must not crash the run, and the call must still
    be answered (an assistant turn with a call and no result is a 400 next time), so
    the text becomes `{UNPARSED_ARGUMENTS: text}`: a valid input that the registry
    answers with an error result saying the arguments were not JSON (tools.py), so the
    model can try again. Empty arguments are no arguments.
    """
    if isinstance(arguments, dict):  # some servers send an object; the format says a string
        return arguments
    text = arguments if isinstance(arguments, str) else ""
    if not text.strip():
        return {}
    try:
        value = json.loads(text)
    except (ValueError, RecursionError):
        value = None
    return value if isinstance(value, dict) else {UNPARSED_ARGUMENTS: text}


def from_openai_tools(tools: list[dict]) -> list[dict]:
    out = []
    for tool in tools:
        function = tool["function"]
        schema = {"name": function["name"], "description": function.get("description"),
                  "input_schema": function.get("parameters", {"type": "object", "properties": {}}),
                  "strict": function.get("strict")}
        out.append({k: v for k, v in schema.items() if v is not None})
    return out


def from_openai_tool_choice(choice: str | dict, parallel_tool_calls: bool | None = None) -> dict:
    if isinstance(choice, dict):
        out: dict[str, Any] = {"type": "tool", "name": choice["function"]["name"]}
    else:
        out = {"type": {"auto": "auto", "required": "any", "none": "none"}[choice]}
    if parallel_tool_calls is False:
        out["disable_parallel_tool_use"] = True
    return out


# --- 3. responses: a chat.completion as the canonical message ----------------------------


def from_openai_response(payload: dict) -> dict:
    """A Chat Completions response (already checked by `completion_problem`) as a canonical message.

    The same dict a Messages API call returns: the loop cannot tell them apart.
    """
    choice = payload["choices"][0]
    blocks = _assistant_blocks(choice["message"])
    return {"id": _text(payload.get("id")), "type": "message", "role": "assistant",
            "model": _text(payload.get("model")), "content": blocks,
            "stop_reason": stop_reason(choice.get("finish_reason"), blocks), "stop_sequence": None,
            "usage": from_openai_usage(payload.get("usage"))}


def stop_reason(finish_reason: Any, blocks: list[dict]) -> str | None:
    """finish_reason as a stop_reason; unknown ones pass through (the loop stops on them, saying so).

    Some servers answer "stop" while asking for tools (older Ollama); the calls decide.
    """
    if finish_reason == "stop" and any(b["type"] == "tool_use" for b in blocks):
        return "tool_use"
    return STOP_REASONS.get(finish_reason, finish_reason) if isinstance(finish_reason, str) else None


def from_openai_usage(usage: Any) -> dict:
    """OpenAI usage as canonical usage. OpenAI's prompt_tokens include the cached ones; the
    Messages API counts them apart (cache_read_input_tokens), so they are taken out.
    DeepSeek reports the cached part as prompt_cache_hit_tokens."""
    usage = usage if isinstance(usage, dict) else {}
    prompt, completion = _count(usage.get("prompt_tokens")), _count(usage.get("completion_tokens"))
    details = usage.get("prompt_tokens_details")
    cached = _count(details.get("cached_tokens") if isinstance(details, dict) else None) \
        or _count(usage.get("prompt_cache_hit_tokens"))
    cached = min(cached, prompt)
    out = {"input_tokens": prompt - cached, "output_tokens": completion}
    if cached:
        out["cache_read_input_tokens"] = cached
    return out


def _count(value: Any) -> int:
    return value if isinstance(value, int) and not isinstance(value, bool) and value >= 0 else 0


def completion_problem(data: Any) -> str | None:
    """What makes `data` not a Chat Completions response the client can read, or None.

    Lenient where providers differ (GLM sends no "object"; fields the translation does not
    read may hold anything), strict where it reads: a first choice with a message; every
    field read of the JSON type the format gives it (or null), so that a wrong type is
    this one typed error and never a TypeError deep inside the translation, nor a message
    quietly missing what was sent; tool calls with a function name; whole-number usage.
    """
    if not isinstance(data, dict):
        return f"expected a JSON object, got {type(data).__name__}"
    choices = data.get("choices")
    if not isinstance(choices, list) or not choices or not isinstance(choices[0], dict):
        return "'choices' should be a non-empty list of objects"
    choice = choices[0]
    message = choice.get("message")
    if not isinstance(message, dict):
        return "choices.0.message should be an object"
    content = message.get("content")
    if not (content is None or isinstance(content, str) or isinstance(content, list)):
        return f"choices.0.message.content should be a string, a list of parts or null, got {_json_kind(content)}"
    for i, part in enumerate(content if isinstance(content, list) else []):
        problem = _fields_problem(part, f"choices.0.message.content.{i}", ("text", "refusal"), str)
        if problem:
            return problem
    problem = (_fields_problem(message, "choices.0.message", _TEXT_FIELDS, str)
               or _fields_problem(choice, "choices.0", ("finish_reason",), str))
    if problem:
        return problem
    calls = message.get("tool_calls")
    if not (calls is None or isinstance(calls, list)):
        return f"choices.0.message.tool_calls should be a list or null, got {_json_kind(calls)}"
    for i, call in enumerate(calls or []):
        where = f"choices.0.message.tool_calls.{i}"
        function = call.get("function") if isinstance(call, dict) else None
        if not isinstance(function, dict) or not isinstance(function.get("name"), str):
            return f"{where} should have a function with a string name"
        problem = _call_problem(call, where)
        if problem:
            return problem
    return _usage_problem(data.get("usage"), "usage")


def chunk_problem(chunk: dict) -> str | None:
    """What makes a stream chunk (a JSON object) one the translator cannot read, or None.

    The rule of `completion_problem`, for the pieces of a stream: each field the translator
    reads has the JSON type the format gives it, or is null or absent; the fields it does
    not read (object, created, system_fingerprint, logprobs, role) may hold anything.
    """
    problem = _usage_problem(chunk.get("usage"), "usage")
    choices = chunk.get("choices")
    if problem or choices is None:
        return problem
    if not isinstance(choices, list):
        return f"'choices' should be a list or null, got {_json_kind(choices)}"
    for i, choice in enumerate(choices):
        problem = _choice_problem(choice, f"choices.{i}")
        if problem:
            return problem
    return None


_TEXT_FIELDS = ("content", "refusal", "reasoning_content", "reasoning")  # text a message or a delta may carry


def _choice_problem(choice: Any, where: str) -> str | None:
    if not isinstance(choice, dict):
        return f"{where} should be an object, got {_json_kind(choice)}"
    delta = choice.get("delta")
    problem = (_fields_problem(choice, where, ("index",), int)
               or _fields_problem(choice, where, ("finish_reason",), str)
               or _usage_problem(choice.get("usage"), f"{where}.usage"))
    if problem or delta is None:
        return problem
    if not isinstance(delta, dict):
        return f"{where}.delta should be an object or null, got {_json_kind(delta)}"
    problem = _fields_problem(delta, f"{where}.delta", _TEXT_FIELDS, str)
    calls = delta.get("tool_calls")
    if problem or calls is None:
        return problem
    if not isinstance(calls, list):
        return f"{where}.delta.tool_calls should be a list or null, got {_json_kind(calls)}"
    for i, call in enumerate(calls):
        index = call.get("index") if isinstance(call, dict) else None
        if not isinstance(index, int) or isinstance(index, bool):
            return f"{where}.delta.tool_calls.{i} should be an object with a whole-number 'index', got {_clipped(call)}"
        problem = _call_problem(call, f"{where}.delta.tool_calls.{i}")
        if problem:
            return problem
    return None


def _call_problem(call: dict, where: str) -> str | None:
    """A tool call (whole, or a stream's fragment of one): id, and the function's name and arguments."""
    function = call.get("function")
    if function is not None and not isinstance(function, dict):
        return f"{where}.function should be an object, got {_json_kind(function)}"
    arguments = (function or {}).get("arguments")
    if not (arguments is None or isinstance(arguments, (str, dict))):  # some servers send an object
        return f"{where}.function.arguments should be a JSON string, got {_json_kind(arguments)}"
    return _fields_problem(call, where, ("id",), str) or _fields_problem(function or {}, f"{where}.function",
                                                                         ("name",), str)


def _usage_problem(usage: Any, where: str) -> str | None:
    if usage is None:
        return None
    if not isinstance(usage, dict):
        return f"'{where}' should be an object, got {_json_kind(usage)}"
    for key in ("prompt_tokens", "completion_tokens", "prompt_cache_hit_tokens"):
        value = usage.get(key)
        if value is not None and not (isinstance(value, int) and not isinstance(value, bool) and value >= 0):
            return f"{where}.{key} should be a whole number >= 0, got {_clipped(value)}"
    details = usage.get("prompt_tokens_details")
    if details is not None and not isinstance(details, dict):
        return f"{where}.prompt_tokens_details should be an object or null, got {_json_kind(details)}"
    cached = (details or {}).get("cached_tokens")
    if cached is not None and not (isinstance(cached, int) and not isinstance(cached, bool) and cached >= 0):
        return f"{where}.prompt_tokens_details.cached_tokens should be a whole number >= 0, got {_clipped(cached)}"
    return None


def _fields_problem(data: Any, where: str, keys: tuple[str, ...], kind: type) -> str | None:
    """The first of `keys` in `data` (an object) that holds neither null nor a value of `kind` (int: not bool)."""
    if not isinstance(data, dict):
        return f"{where} should be an object, got {_json_kind(data)}"
    for key in keys:
        value = data.get(key)
        if value is not None and (not isinstance(value, kind) or kind is int and isinstance(value, bool)):
            name = {str: "a string", int: "a whole number"}[kind]
            return f"{where}.{key} should be {name} or null, got {_json_kind(value)}"
    return None


def _json_kind(value: Any) -> str:
    """A value's JSON type, as an error message names it."""
    if isinstance(value, bool):
        return "a boolean"
    if isinstance(value, (int, float)):
        return "a number"
    return {str: "a string", list: "a list", dict: "an object"}.get(type(value), "null" if value is None else
                                                                    type(value).__name__)


def _clipped(value: Any, limit: int = 120) -> str:
    text = json.dumps(value, ensure_ascii=False, default=str)
    return text if len(text) <= limit else text[:limit] + "…"


def _text(value: Any) -> str:
    return value if isinstance(value, str) else ""


# --- 4. streams: chat.completion.chunk events as the Messages API's events ------------------


class ChunkTranslator:
    """OpenAI stream chunks in, the Messages API events of the same message out.

    `events(sse)` takes one server-sent event (`data: {chunk}` or `data: [DONE]`) and
    returns the canonical events it completes, which the client's MessageAccumulator,
    `on_event` and the loop's StreamWatcher read exactly as they read an Anthropic
    stream: message_start first; text and reasoning as they arrive (text_delta,
    thinking_delta); then each tool call as one block; message_delta with the stop
    reason and usage; message_stop.

    Tool calls are handed on whole, in order of `index`, once the choice has finished:
    OpenAI streams their arguments as fragments per `index` (several calls may
    interleave), and only the whole text says whether they are JSON at all. So each
    call's fragments are joined under its own index, never across calls, and parsed as
    `parse_arguments` parses a non-streamed answer: streamed or not, the same message.
    Usage comes in a last chunk after the finish (`stream_options.include_usage`), so
    message_start says 0 tokens and message_delta has the counts, and the message ends
    at `data: [DONE]` (or, as the OpenAI SDK allows, at the end of the body).
    """

    def __init__(self) -> None:
        self.started = False
        self.finish: str | None = None
        self.usage: Any = None
        self.blocks = 0          # canonical blocks begun so far
        self.open: str | None = None  # "text" or "thinking": the block being streamed
        self.calls: dict[int, dict] = {}  # OpenAI index -> {"id", "name", "parts"}
        self.done = False

    def events(self, sse: Any) -> list[dict]:
        data = sse.data.strip()
        if data.startswith("[DONE]"):
            return self.end(done=True)
        try:
            chunk = json.loads(data)
        except (ValueError, RecursionError):
            raise MalformedResponseError(f"a chunk's data is not JSON: {data[:300]!r}",
                                         type="malformed_response") from None
        if not isinstance(chunk, dict):
            raise MalformedResponseError(f"a chunk should be a JSON object, got {data[:300]!r}",
                                         type="malformed_response")
        if chunk.get("error"):
            return [error_event(chunk["error"])]
        problem = chunk_problem(chunk)
        if problem:
            raise MalformedResponseError(f"not a valid chat.completion.chunk: {problem}; the chunk: {data[:300]!r}",
                                         type="malformed_response")
        out = [] if self.started else [self._start(chunk)]
        if chunk.get("usage") is not None:
            self.usage = chunk["usage"]
        for choice in chunk.get("choices") or []:
            if choice.get("index", 0) in (0, None):
                if choice.get("usage") is not None:  # some servers put it in the choice instead
                    self.usage = choice["usage"]
                out += self._choice(choice)
        return out

    def end(self, done: bool = False) -> list[dict]:
        """The closing events, once the choice has finished (at [DONE], or at the end of the body)."""
        if self.done or self.finish is None:
            if done and not self.done:
                raise MalformedResponseError("data: [DONE] came before the choice finished (no finish_reason)",
                                             type="malformed_response")
            return []
        self.done = True
        return [{"type": "message_delta", "delta": {"stop_reason": self._stop_reason(), "stop_sequence": None},
                 "usage": from_openai_usage(self.usage)}, {"type": "message_stop"}]

    def _start(self, chunk: dict) -> dict:
        self.started = True
        message = {"id": _text(chunk.get("id")), "type": "message", "role": "assistant",
                   "model": _text(chunk.get("model")), "content": [], "stop_reason": None, "stop_sequence": None,
                   "usage": {"input_tokens": 0, "output_tokens": 0}}
        return {"type": "message_start", "message": message}

    def _choice(self, choice: dict) -> list[dict]:
        if self.finish is not None:
            return []  # a finished choice says nothing more (a usage chunk carries no choices)
        delta = choice.get("delta") or {}  # its fields' types are checked (chunk_problem)
        out: list[dict] = []
        reasoning = delta.get("reasoning_content") or delta.get("reasoning")
        if reasoning:
            out += self._grow("thinking", reasoning)
        for key in ("content", "refusal"):
            if delta.get(key):
                out += self._grow("text", delta[key])
        for call in delta.get("tool_calls") or []:
            self._fragment(call)
        if choice.get("finish_reason") is not None:
            self.finish = choice["finish_reason"]
            out += self._close() + self._tool_blocks()
        return out

    def _grow(self, kind: str, piece: str) -> list[dict]:
        """A piece of text or reasoning: into the open block of its kind, or a new block."""
        out = []
        if self.open != kind:
            out += self._close()
            self.open = kind
            out.append({"type": "content_block_start", "index": self.blocks, "content_block": {"type": kind, kind: ""}})
        delta = {"type": "text_delta", "text": piece} if kind == "text" else {"type": "thinking_delta", "thinking": piece}
        return out + [{"type": "content_block_delta", "index": self.blocks, "delta": delta}]

    def _close(self) -> list[dict]:
        if self.open is None:
            return []
        self.open = None
        self.blocks += 1
        return [{"type": "content_block_stop", "index": self.blocks - 1}]

    def _fragment(self, call: dict) -> None:
        """One tool-call delta (its types checked by chunk_problem): its first carries id and name, the
        later ones pieces of arguments."""
        entry = self.calls.setdefault(call["index"], {"id": None, "name": None, "parts": []})
        function = call.get("function") or {}
        for key, value in (("id", call.get("id")), ("name", function.get("name"))):
            if value and entry[key] is None:
                entry[key] = value
        arguments = function.get("arguments")
        if arguments is not None:  # a whole object, as some servers send: its JSON text
            entry["parts"].append(arguments if isinstance(arguments, str) else _arguments_text(arguments))

    def _tool_blocks(self) -> list[dict]:
        out = []
        for position, (_, entry) in enumerate(sorted(self.calls.items())):
            if entry["name"] is None:
                raise MalformedResponseError(f"tool call {position} never said its function's name",
                                             type="malformed_response")
            block = _tool_use({"id": entry["id"], "function": {"name": entry["name"],
                                                                "arguments": "".join(entry["parts"])}}, position)
            index, arguments = self.blocks, block["input"]
            out.append({"type": "content_block_start", "index": index,
                        "content_block": {**block, "input": {}}})
            if arguments:
                out.append({"type": "content_block_delta", "index": index,
                            "delta": {"type": "input_json_delta", "partial_json": _arguments_text(arguments)}})
            out.append({"type": "content_block_stop", "index": index})
            self.blocks += 1
        return out

    def _stop_reason(self) -> str | None:
        return stop_reason(self.finish, [{"type": "tool_use"}] if self.calls else [])


# --- 5. errors ---------------------------------------------------------------------------------

# OpenAI's error types (and codes) as the Messages API's, so that each maps to the same typed error.
ERROR_TYPES = {"server_error": "api_error", "rate_limit_exceeded": "rate_limit_error",
               "insufficient_quota": "rate_limit_error", "requests": "rate_limit_error",
               "tokens": "rate_limit_error", "invalid_api_key": "authentication_error"}


def openai_error_fields(payload: Any) -> tuple[str, str] | None:
    """(message, kind) of an OpenAI-style error body, or None if it is not one.

    `{"error": {"message", "type", "param", "code"}}` (the code says more than the type:
    invalid_api_key, rate_limit_exceeded, model_not_found); also `{"error": "text"}` and
    vLLM's older `{"object": "error", "message": ...}`.
    """
    if not isinstance(payload, dict):
        return None
    error = payload.get("error")
    if isinstance(error, dict):
        code, kind = error.get("code"), error.get("type")
        return str(error.get("message", "")), str(code if isinstance(code, str) and code else kind or "error")
    if isinstance(error, str):
        return error, "error"
    if payload.get("object") == "error" and "message" in payload:
        return str(payload["message"]), str(payload.get("type") or "error")
    return None


def error_event(error: Any) -> dict:
    """An error chunk in the middle of a stream as the Messages API's `error` event."""
    fields = openai_error_fields({"error": error}) or ("", "error")
    return {"type": "error", "error": {"type": ERROR_TYPES.get(fields[1], fields[1]), "message": fields[0]}}


# --- 6. the OpenAI format: what ClientCore asks (the Messages API's own: clientcore.py) ---


class OpenAIFormat:
    """The OpenAI Chat Completions API, spoken by translating at the edge (sections 2 to 5)."""

    name, api_name, path, count_path = "openai", "Chat Completions", "/chat/completions", None
    request_id_header = "x-request-id"
    hint_404 = ("Check the model name (MINIAGENT_MODEL) and the base URL: OpenAI-compatible servers "
                "document theirs, usually ending in /v1, and the client adds /chat/completions.")

    def __init__(self, max_tokens_field: str = "max_tokens", tool_choices: tuple[str, ...] | None = None) -> None:
        self.max_tokens_field, self.tool_choices = max_tokens_field, tool_choices

    def headers(self, key: str, version: str) -> dict[str, str]:
        return {"authorization": f"Bearer {key}", "content-type": "application/json"}

    def request(self, body: dict) -> dict:
        return to_openai_request(body, max_tokens_field=self.max_tokens_field, tool_choices=self.tool_choices)

    def usage(self, usage: dict) -> dict:
        return from_openai_usage(usage)

    def problem(self, payload: Any) -> str | None:
        return completion_problem(payload)

    def message(self, payload: dict) -> dict:
        return from_openai_response(payload)

    def translator(self) -> ChunkTranslator:
        return ChunkTranslator()

    def error_fields(self, payload: Any) -> tuple[str, str] | None:
        return openai_error_fields(payload)
