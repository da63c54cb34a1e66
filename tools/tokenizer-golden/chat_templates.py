#!/usr/bin/python3
"""Expected chat-template renderings for the Qwen3, Llama 3 and Llama 3.2 templates.

Renders ~40 conversations with real Python Jinja2 (Debian's python3-jinja2; run with
/usr/bin/python3) set up as transformers' `_compile_jinja_template` does: an
ImmutableSandboxedEnvironment with trim_blocks, lstrip_blocks and the loopcontrols extension, the
`tojson` filter as json.dumps(ensure_ascii=False, indent, separators, sort_keys), and the globals
`raise_exception` and `strftime_now` (here reading a fixed date, FIXED_DATE). The render call and
the continue_final_message cut follow transformers' `apply_chat_template`: variables are the
tokenizer's special_tokens_map, then the extra kwargs, then messages/tools/documents (None when
absent)/add_generation_prompt.

    apt-get install -y python3-jinja2
    /usr/bin/python3 tools/tokenizer-golden/chat_templates.py [fixtures-dir] [out-file]
"""
import datetime
import json
import os
import sys

import jinja2
from jinja2.ext import loopcontrols
from jinja2.sandbox import ImmutableSandboxedEnvironment

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(os.path.dirname(HERE))
FIXTURES = sys.argv[1] if len(sys.argv) > 1 else os.path.join(
    REPO, "cluster-node", "target", "tokenizer-fixtures")
OUT = sys.argv[2] if len(sys.argv) > 2 else os.path.join(
    REPO, "cluster-node/src/test/resources/dev/troupe/engine/template/golden-chat-templates.json")
FIXED_DATE = datetime.datetime(2026, 3, 5, 14, 30, 0)
MODELS = ["qwen3", "llama3", "llama3_2"]
SPECIAL_TOKEN_ATTRIBUTES = ["bos_token", "eos_token", "unk_token", "sep_token", "pad_token",
                            "cls_token", "mask_token", "additional_special_tokens"]


def environment():
    def raise_exception(message):
        raise jinja2.exceptions.TemplateError(message)

    def tojson(x, ensure_ascii=False, indent=None, separators=None, sort_keys=False):
        return json.dumps(x, ensure_ascii=ensure_ascii, indent=indent, separators=separators,
                          sort_keys=sort_keys)

    def strftime_now(format):
        return FIXED_DATE.strftime(format)

    env = ImmutableSandboxedEnvironment(trim_blocks=True, lstrip_blocks=True,
                                        extensions=[loopcontrols])
    env.filters["tojson"] = tojson
    env.globals["raise_exception"] = raise_exception
    env.globals["strftime_now"] = strftime_now
    return env


def special_tokens_map(config):
    out = {}
    for attr in SPECIAL_TOKEN_ATTRIBUTES:
        value = config.get(attr)
        if value is None:
            continue
        if isinstance(value, dict):
            value = value["content"]
        if isinstance(value, list):
            value = [v["content"] if isinstance(v, dict) else v for v in value]
        out[attr] = value
    return out


def apply_chat_template(template, specials, case):
    messages = case["messages"]
    add_generation_prompt = case.get("add_generation_prompt", False)
    continue_final_message = case.get("continue_final_message", False)
    if continue_final_message and add_generation_prompt:
        raise ValueError("continue_final_message and add_generation_prompt are not compatible.")
    kwargs = {**specials, **case.get("kwargs", {})}
    rendered = template.render(messages=messages, tools=case.get("tools"),
                               documents=case.get("documents"),
                               add_generation_prompt=add_generation_prompt, **kwargs)
    if continue_final_message:
        final_message = messages[-1]["content"]
        if isinstance(final_message, (list, tuple)):
            for block in reversed(final_message):
                if "text" in block:
                    final_message = block["text"]
                    break
            else:
                raise ValueError("no text to continue in the final message")
        if final_message.strip() not in rendered:
            raise ValueError("the final message does not appear in the rendered chat")
        loc = rendered.rindex(final_message.strip())
        if rendered[loc:loc + len(final_message.lstrip())] == final_message:
            rendered = rendered[:loc + len(final_message.lstrip())]
        else:
            rendered = rendered[:loc + len(final_message.strip())]
    return rendered


WEATHER = {"type": "function", "function": {
    "name": "get_weather", "description": "Get the current weather in a city.",
    "parameters": {"type": "object", "properties": {
        "city": {"type": "string", "description": "City name, e.g. Zürich or 東京"},
        "unit": {"type": "string", "enum": ["celsius", "fahrenheit"]}},
        "required": ["city"]}}}
SEARCH = {"type": "function", "function": {
    "name": "search", "description": "Search the web; returns \"snippets\".",
    "parameters": {"type": "object", "properties": {
        "query": {"type": "string"}, "limit": {"type": "integer", "minimum": 1, "default": 5},
        "filters": {"type": "object", "properties": {"lang": {"type": "array", "items": {"type": "string"}}}}},
        "required": ["query"]}}}
CALC = {"type": "function", "function": {"name": "calc", "description": "Evaluate an expression.",
                                         "parameters": {"type": "object", "properties": {
                                             "expr": {"type": "string"}}}}}


def call(name, args, as_string=False, call_id="call_1"):
    return {"id": call_id, "type": "function",
            "function": {"name": name, "arguments": json.dumps(args) if as_string else args}}


U = lambda c: {"role": "user", "content": c}
A = lambda c, **kw: {"role": "assistant", "content": c, **kw}
S = lambda c: {"role": "system", "content": c}
T = lambda c, call_id="call_1": {"role": "tool", "content": c, "tool_call_id": call_id}

CASES = [
    ("single_user", {"messages": [U("Hello!")]}),
    ("single_user_gen", {"messages": [U("Hello!")], "add_generation_prompt": True}),
    ("system_user_gen", {"messages": [S("You are a helpful assistant."), U("What is 2+2?")], "add_generation_prompt": True}),
    ("multi_turn", {"messages": [S("Be brief."), U("Hi"), A("Hello! How can I help?"), U("Tell me a joke.")], "add_generation_prompt": True}),
    ("multi_turn_no_gen", {"messages": [U("Hi"), A("Hello!"), U("Bye"), A("Goodbye!")]}),
    ("assistant_last_no_gen", {"messages": [U("Ping"), A("Pong")]}),
    ("reasoning_content", {"messages": [U("Why is the sky blue?"), A("Rayleigh scattering.", reasoning_content="Short wavelengths scatter more.")]}),
    ("reasoning_content_then_user", {"messages": [U("Q1"), A("A1", reasoning_content="R1"), U("Q2")], "add_generation_prompt": True}),
    ("inline_think", {"messages": [U("Compute 3*7"), A("<think>\n3 times 7 is 21.\n</think>\n\n21")]}),
    ("inline_think_history", {"messages": [U("a"), A("<think>x</think>first"), U("b"), A("<think>\ny\n</think>\nsecond")], "add_generation_prompt": False}),
    ("enable_thinking_false", {"messages": [U("Quick answer please.")], "add_generation_prompt": True, "kwargs": {"enable_thinking": False}}),
    ("enable_thinking_true", {"messages": [U("Think hard.")], "add_generation_prompt": True, "kwargs": {"enable_thinking": True}}),
    ("tools_user", {"messages": [U("Weather in Paris?")], "tools": [WEATHER], "add_generation_prompt": True}),
    ("tools_system_user", {"messages": [S("You can call tools."), U("Search for jinja docs")], "tools": [WEATHER, SEARCH], "add_generation_prompt": True}),
    ("tool_call_roundtrip", {"messages": [U("Weather in Paris?"), A("", tool_calls=[call("get_weather", {"city": "Paris"})]),
                                          T("{\"temp\": 21.5, \"unit\": \"celsius\"}"), ], "tools": [WEATHER], "add_generation_prompt": True}),
    ("tool_call_string_args", {"messages": [U("Weather in Oslo?"), A("Let me check.", tool_calls=[call("get_weather", {"city": "Oslo", "unit": "celsius"}, as_string=True)]),
                                            T("cold")], "tools": [WEATHER], "add_generation_prompt": True}),
    ("parallel_tool_calls", {"messages": [U("Weather in Rome and Bern?"), A("", tool_calls=[call("get_weather", {"city": "Rome"}), call("get_weather", {"city": "Bern"}, call_id="call_2")]),
                                          T("sunny"), T("rainy", "call_2"), A("Rome is sunny, Bern is rainy.")], "tools": [WEATHER]}),
    ("tool_call_numbers", {"messages": [U("calc"), A(None if False else "", tool_calls=[call("search", {"query": "pi", "limit": 3, "ratio": 1.5, "eps": 1e-07, "big": 1e16, "neg": -0.25, "flag": True, "none": None, "list": [1, "two", 3.0]})]),
                                        T("3.14159")], "tools": [SEARCH], "add_generation_prompt": True}),
    ("tool_content_json_obj", {"messages": [U("q"), A("", tool_calls=[call("calc", {"expr": "1+1"})]), {"role": "tool", "content": "{\"result\": 2}", "tool_call_id": "call_1"}], "tools": [CALC], "add_generation_prompt": True}),
    ("tool_call_without_function_wrapper", {"messages": [U("q"), A("ok", tool_calls=[{"name": "calc", "arguments": {"expr": "2*3"}}])]}),
    ("multi_step_tools", {"messages": [U("Plan a trip"), A("", tool_calls=[call("search", {"query": "flights"})]), T("<tool_response>flights</tool_response>"),
                                       A("", tool_calls=[call("search", {"query": "hotels"}, call_id="c2")]), T("hotels", "c2")], "tools": [SEARCH], "add_generation_prompt": True}),
    ("user_looks_like_tool_response", {"messages": [U("<tool_response>not really</tool_response>"), A("ok", reasoning_content="hmm"), U("next")], "add_generation_prompt": True}),
    ("continue_final", {"messages": [U("Write a haiku about rain."), A("Soft rain on the roof,")], "continue_final_message": True}),
    ("continue_final_trailing_space", {"messages": [U("Count:"), A("one two ")], "continue_final_message": True}),
    ("continue_final_with_system", {"messages": [S("sys"), U("Finish: The quick brown"), A("fox")], "continue_final_message": True}),
    ("continue_final_and_gen_error", {"messages": [U("x"), A("y")], "continue_final_message": True, "add_generation_prompt": True}),
    ("unicode", {"messages": [S("Réponds en français 🇫🇷"), U("日本語で答えて: 東京の天気は？ 😀👍🏽"), A("晴れです ☀️ — café naïve")], "add_generation_prompt": True}),
    ("jinja_lookalike_content", {"messages": [U("Render {{ x }} and {% if y %}z{% endif %} {# c #} literally"), A("Sure: {{ x }}")], "add_generation_prompt": False}),
    ("empty_contents", {"messages": [S(""), U(""), A("")], "add_generation_prompt": True}),
    ("padded_whitespace", {"messages": [S("  spaced system  \n"), U("\n\n  padded user \t "), A("  padded assistant  ")], "add_generation_prompt": True}),
    ("newlines_content", {"messages": [U("line1\nline2\r\nline3\n\n\n"), A("a\n\nb")], "add_generation_prompt": True}),
    ("documents", {"messages": [U("Summarize the docs")], "documents": [{"title": "Doc A", "text": "Alpha"}, {"title": "Doc B", "text": "Beta"}], "add_generation_prompt": True}),
    ("date_string_kwarg", {"messages": [U("What day is it?")], "kwargs": {"date_string": "01 Jan 2030"}, "add_generation_prompt": True}),
    ("tools_not_in_user_message", {"messages": [S("sys"), U("Weather?")], "tools": [WEATHER], "kwargs": {"tools_in_user_message": False}, "add_generation_prompt": True}),
    ("custom_tools_kwarg", {"messages": [U("Search it")], "kwargs": {"custom_tools": [SEARCH]}, "add_generation_prompt": True}),
    ("tools_without_user", {"messages": [S("only system")], "tools": [CALC], "add_generation_prompt": True}),
    ("system_only", {"messages": [S("You are terse.")], "add_generation_prompt": True}),
    ("long_conversation", {"messages": [S("Count with me.")] + [m for i in range(1, 9) for m in (U(f"n={i}"), A(f"{i + 1}"))] + [U("n=9")], "add_generation_prompt": True}),
    ("ipython_role", {"messages": [U("run"), {"role": "ipython", "content": "output 42"}], "add_generation_prompt": True}),
    ("tool_unicode_args", {"messages": [U("天気"), A("", tool_calls=[call("get_weather", {"city": "東京", "note": "naïve \"quoted\" \\ back\nslash"})]), T("晴れ")], "tools": [WEATHER], "add_generation_prompt": True}),
    ("empty_tools_list", {"messages": [U("Hi")], "tools": [], "add_generation_prompt": True}),
    ("content_parts", {"messages": [S([{"type": "text", "text": "sys part"}]), U([{"type": "text", "text": "look "}, {"type": "image"}, {"type": "text", "text": " at this"}]), A([{"type": "text", "text": "nice"}])], "add_generation_prompt": True}),
    ("continue_parts", {"messages": [U("hi"), A([{"type": "text", "text": "Once upon"}])], "continue_final_message": True}),
    ("reasoning_none", {"messages": [U("Q"), A("A", reasoning_content=None)], "add_generation_prompt": False}),
]


def main():
    env = environment()
    out = {
        "origin": "tools/tokenizer-golden/chat_templates.py: Python Jinja2 %s (Debian python3-jinja2) "
                  "configured as transformers' _compile_jinja_template" % jinja2.__version__,
        "fixedDate": FIXED_DATE.isoformat(),
        "cases": [],
    }
    for model in MODELS:
        with open(os.path.join(FIXTURES, model, "tokenizer_config.json")) as f:
            config = json.load(f)
        template = env.from_string(config["chat_template"])
        specials = special_tokens_map(config)
        for name, case in CASES:
            entry = {"model": model, "name": name, **case}
            try:
                entry["expected"] = apply_chat_template(template, specials, case)
            except Exception as e:  # the Java side must fail too
                entry["error"] = "%s: %s" % (type(e).__name__, e)
            out["cases"].append(entry)
    os.makedirs(os.path.dirname(OUT), exist_ok=True)
    with open(OUT, "w", encoding="utf-8") as f:
        json.dump(out, f, ensure_ascii=False, indent=1)
        f.write("\n")
    ok = sum(1 for c in out["cases"] if "expected" in c)
    print("%s: %d cases, %d rendered, %d errors" % (OUT, len(out["cases"]), ok, len(out["cases"]) - ok))


if __name__ == "__main__":
    main()
