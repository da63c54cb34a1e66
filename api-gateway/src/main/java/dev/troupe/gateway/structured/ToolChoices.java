package dev.troupe.gateway.structured;

import static dev.troupe.gateway.structured.ConstraintMapper.bad;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.node.ArrayNode;
import com.fasterxml.jackson.databind.node.JsonNodeFactory;
import com.fasterxml.jackson.databind.node.ObjectNode;
import dev.troupe.protocol.api.chat.ChatCompletionRequest.Tool;
import dev.troupe.protocol.cluster.StructuredOutputsParams;
import dev.troupe.protocol.cluster.ToolCalling;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;

/**
 * {@code tool_choice} as vLLM reads it, and the JSON schemas that force tool calls ({@code
 * "required"}: an array of calls of the given tools; a named function: its parameters).
 */
final class ToolChoices {

  private ToolChoices() {}

  private static final JsonNodeFactory F = JsonNodeFactory.instance;

  /**
   * {@code "none"} (or absent without tools) is plain content; absent with tools is {@code "auto"}
   * when the model serves it, else plain content (vLLM answers 400 there; see docs/api.md).
   */
  static ToolCalling toolCalling(
      List<Tool> tools, JsonNode choice, Boolean parallelToolCalls, String autoParser) {
    boolean parallel = parallelToolCalls == null || parallelToolCalls;
    boolean hasTools = tools != null && !tools.isEmpty();
    if (choice == null || choice.isNull())
      return hasTools && autoParser != null
          ? ToolCalling.auto(autoParser, parallel)
          : ToolCalling.NONE;
    if (choice.isTextual() && choice.asText().equals("none")) return ToolCalling.NONE;
    if (tools == null) throw bad("When using `tool_choice`, `tools` must be set.", "tool_choice");
    if (choice.isTextual()) {
      switch (choice.asText()) {
        case "auto":
          if (autoParser == null)
            throw bad(
                "\"auto\" tool choice requires --enable-auto-tool-choice and --tool-call-parser to be"
                    + " set",
                "tool_choice");
          return ToolCalling.auto(autoParser, parallel);
        case "required":
          if (!hasTools)
            throw bad(
                "`tools` must not be an empty array when `tool_choice` is \"required\".", "tools");
          return ToolCalling.required(parallel);
        default:
          throw bad(
              "Invalid value for `tool_choice`: "
                  + choice.asText()
                  + "! Only named tools, \"none\", \"auto\" or \"required\" are supported.",
              "tool_choice");
      }
    }
    if (!choice.isObject())
      throw bad(
          "Invalid value for `tool_choice`: "
              + choice
              + "! Only named tools, \"none\", \"auto\" or \"required\" are supported.",
          "tool_choice");
    JsonNode function = choice.get("function");
    if (function == null || !function.isObject())
      throw bad(
          "Invalid value for `function`: `" + function + "` in `tool_choice`! Expected a dict.",
          "tool_choice.function");
    JsonNode name = function.get("name");
    if (name == null || !name.isTextual() || name.asText().isEmpty())
      throw bad(
          "Expected field `name` in `function` in `tool_choice`! Got `" + function + "`.",
          "tool_choice.function.name");
    if (!ConstraintMapper.names(tools).contains(name.asText()))
      throw bad(
          "The tool specified in `tool_choice` does not match any of the specified `tools`",
          "tool_choice");
    return ToolCalling.named(name.asText());
  }

  /**
   * The schema of forced calls. {@code "required"}: vLLM's array of {@code {"name", "parameters"}}
   * (one item at most without parallel calls), the tools' {@code $defs} hoisted to the root so
   * their {@code #/$defs/…} references resolve; named: the function's parameters.
   */
  static StructuredOutputsParams schema(List<Tool> tools, ToolCalling calling) {
    if (calling.mode() == ToolCalling.Mode.NAMED) {
      for (Tool t : tools)
        if (t.function().name().equals(calling.function()))
          return StructuredOutputsParams.json(parameters(t).toString(), "tools");
      throw new IllegalStateException("named tool vanished");
    }
    ObjectNode root = F.objectNode();
    root.put("type", "array");
    root.put("minItems", 1);
    if (!calling.parallel()) root.put("maxItems", 1);
    ArrayNode anyOf = F.arrayNode();
    Map<String, JsonNode> defs = new LinkedHashMap<>();
    for (int i = 0; i < tools.size(); i++) {
      Tool t = tools.get(i);
      JsonNode params = parameters(t);
      for (String key : List.of("$defs", "definitions")) {
        JsonNode d = params.get(key);
        if (d == null || !d.isObject()) continue;
        for (Map.Entry<String, JsonNode> e : d.properties()) {
          JsonNode old = defs.putIfAbsent(e.getKey(), e.getValue());
          if (old != null && !old.equals(e.getValue()))
            throw bad(
                "Tool definitions have conflicting $defs named '" + e.getKey() + "'.",
                "tools[" + i + "].function.parameters");
        }
      }
      ObjectNode call = F.objectNode();
      ObjectNode props = call.putObject("properties");
      ObjectNode name = props.putObject("name");
      name.put("type", "string");
      name.putArray("enum").add(t.function().name());
      props.set("parameters", params);
      call.putArray("required").add("name").add("parameters");
      anyOf.add(call);
    }
    root.putObject("items").set("anyOf", anyOf);
    if (!defs.isEmpty()) {
      ObjectNode d = root.putObject("$defs");
      defs.forEach(d::set);
    }
    return StructuredOutputsParams.json(root.toString(), "tools");
  }

  /** A tool's parameters schema; none means no arguments: exactly {@code {}}. */
  private static JsonNode parameters(Tool t) {
    Map<String, Object> p = t.function().parameters();
    if (p == null) {
      ObjectNode empty = F.objectNode();
      empty.put("type", "object");
      empty.putObject("properties");
      empty.put("additionalProperties", false);
      return empty;
    }
    return ConstraintMapper.tree(p);
  }
}
