package dev.troupe.gateway.structured;

import com.fasterxml.jackson.core.JsonProcessingException;
import com.fasterxml.jackson.databind.JsonNode;
import dev.troupe.gateway.http.ApiException;
import dev.troupe.protocol.Json;
import dev.troupe.protocol.api.chat.ChatCompletionRequest;
import dev.troupe.protocol.api.chat.ChatCompletionRequest.ResponseFormat;
import dev.troupe.protocol.api.chat.ChatCompletionRequest.Tool;
import dev.troupe.protocol.api.chat.StructuredOutputs;
import dev.troupe.protocol.cluster.StructuredOutputsParams;
import dev.troupe.protocol.cluster.ToolCalling;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;

/**
 * {@code structured_outputs}, {@code response_format}, {@code tools} and {@code tool_choice} → the
 * one constraint the worker compiles and how the output becomes tool calls, as vLLM's {@code
 * to_sampling_params} and serving layer decide them. Every combination it cannot honour is a 400
 * naming the field; syntax errors of schemas, regexes and grammars are the worker's 400s (it
 * compiles them).
 */
public final class ConstraintMapper {

  private ConstraintMapper() {}

  /**
   * @param constraint what every generated token must respect, or null
   * @param toolCalling how the text becomes {@code tool_calls}
   */
  public record Result(StructuredOutputsParams constraint, ToolCalling toolCalling) {}

  /**
   * @param autoToolParser the model's parser for {@code tool_choice: "auto"}, or null when auto
   *     tool choice is not enabled for it
   * @param beamSearch the request uses beam search (which vLLM runs without constraints: refused
   *     here rather than ignored)
   */
  public static Result map(ChatCompletionRequest r, String autoToolParser, boolean beamSearch) {
    StructuredOutputs so = r.structuredOutputs();
    StructuredOutputsParams constraint = requested(so, r.responseFormat());
    ToolCalling tools =
        ToolChoices.toolCalling(r.tools(), r.toolChoice(), r.parallelToolCalls(), autoToolParser);
    if (tools.mode() == ToolCalling.Mode.REQUIRED || tools.mode() == ToolCalling.Mode.NAMED) {
      if (constraint != null)
        throw bad(
            "You can only either use constraints for structured outputs or tools, not both.",
            "tool_choice");
      constraint = ToolChoices.schema(r.tools(), tools);
    }
    if (constraint != null && so != null)
      constraint =
          constraint.withJsonOptions(
              isTrue(so.disableAnyWhitespace()),
              isTrue(so.disableAdditionalProperties()),
              so.whitespacePattern());
    if (constraint != null && beamSearch)
      throw bad(
          "Structured outputs and forced tool calls are not supported with beam search.",
          "use_beam_search");
    return new Result(constraint, tools);
  }

  /**
   * The constraint of a request without tools ({@code /v1/completions}): {@code structured_outputs}
   * or {@code response_format}, with the JSON options; null when none.
   */
  public static StructuredOutputsParams map(
      StructuredOutputs so, ResponseFormat rf, boolean beamSearch) {
    StructuredOutputsParams constraint = requested(so, rf);
    if (constraint != null && so != null)
      constraint =
          constraint.withJsonOptions(
              isTrue(so.disableAnyWhitespace()),
              isTrue(so.disableAdditionalProperties()),
              so.whitespacePattern());
    if (constraint != null && beamSearch)
      throw bad(
          "Structured outputs and forced tool calls are not supported with beam search.",
          "use_beam_search");
    return constraint;
  }

  /** The one kind asked for by {@code structured_outputs} or {@code response_format}, or null. */
  private static StructuredOutputsParams requested(StructuredOutputs so, ResponseFormat rf) {
    StructuredOutputsParams fromOutputs = so == null ? null : structuredOutputs(so);
    StructuredOutputsParams fromFormat = responseFormat(rf);
    if (fromOutputs != null && fromFormat != null)
      throw bad(
          "You can only use one kind of structured outputs constraint but multiple are specified: "
              + "structured_outputs and response_format.",
          "response_format");
    return fromOutputs != null ? fromOutputs : fromFormat;
  }

  /** The kind set in {@code structured_outputs}, or null when only options are given. */
  private static StructuredOutputsParams structuredOutputs(StructuredOutputs so) {
    if (so.json() != null && !so.json().isNull()) {
      String schema = so.json().isTextual() ? so.json().asText() : so.json().toString();
      return StructuredOutputsParams.json(schema, "structured_outputs.json");
    }
    if (so.regex() != null)
      return StructuredOutputsParams.regex(so.regex(), "structured_outputs.regex");
    if (so.choice() != null)
      return StructuredOutputsParams.choice(so.choice(), "structured_outputs.choice");
    if (so.grammar() != null)
      return StructuredOutputsParams.grammar(so.grammar(), "structured_outputs.grammar");
    if (isTrue(so.jsonObject()))
      return StructuredOutputsParams.jsonObject("structured_outputs.json_object");
    if (so.structuralTag() != null)
      return StructuredOutputsParams.structuralTag(
          so.structuralTag(), "structured_outputs.structural_tag");
    return null;
  }

  /** vLLM's mapping of {@code response_format} onto structured outputs. */
  private static StructuredOutputsParams responseFormat(ResponseFormat rf) {
    if (rf == null || rf.type() == null) return null;
    switch (rf.type()) {
      case "json_object":
        return StructuredOutputsParams.jsonObject("response_format");
      case "json_schema":
        {
          Map<String, Object> schema = rf.jsonSchema() == null ? null : rf.jsonSchema().schema();
          // no schema: any JSON value (OpenAI makes the schema optional)
          return StructuredOutputsParams.json(
              schema == null ? "{}" : toJson(schema), "response_format");
        }
      case "structural_tag":
        {
          Map<String, Object> tag = new LinkedHashMap<>();
          tag.put("type", "structural_tag");
          if (rf.structures() != null) tag.put("structures", rf.structures());
          if (rf.triggers() != null) tag.put("triggers", rf.triggers());
          if (rf.format() != null) tag.put("format", rf.format());
          return StructuredOutputsParams.structuralTag(toJson(tag), "response_format");
        }
      default:
        return null; // text
    }
  }

  static String toJson(Object value) {
    try {
      return Json.mapper().writeValueAsString(value);
    } catch (JsonProcessingException e) {
      throw new IllegalStateException("a parsed JSON value cannot be written back", e);
    }
  }

  static JsonNode tree(Object value) {
    return Json.mapper().valueToTree(value);
  }

  static boolean isTrue(Boolean b) {
    return b != null && b;
  }

  static ApiException bad(String message, String param) {
    return ApiException.badRequest(message, param);
  }

  /** The tools' names, in order. */
  static List<String> names(List<Tool> tools) {
    List<String> out = new ArrayList<>();
    if (tools != null) for (Tool t : tools) out.add(t.function().name());
    return out;
  }
}
