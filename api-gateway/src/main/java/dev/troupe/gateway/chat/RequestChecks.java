package dev.troupe.gateway.chat;

import com.fasterxml.jackson.databind.JsonNode;
import dev.troupe.gateway.http.ApiException;
import dev.troupe.gateway.http.RequestIds;
import dev.troupe.protocol.Json;
import dev.troupe.protocol.api.chat.ChatCompletionRequest.ResponseFormat;
import dev.troupe.protocol.api.chat.ChatCompletionRequest.StreamOptions;
import dev.troupe.protocol.api.chat.StructuredOutputs;
import java.math.BigInteger;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.Set;

/**
 * The request-model rules that {@code /v1/chat/completions} and {@code /v1/completions} share
 * (vLLM's validators on both request models), each a 400 naming the field: stream options, prompt
 * logprobs, structured outputs and response format, cache salt, seed, truncation, ids.
 *
 * <p>Pure and thread-safe.
 */
public final class RequestChecks {
  private static final Set<String> RESPONSE_FORMAT_TYPES =
      Set.of("text", "json_object", "json_schema", "structural_tag");
  private static final BigInteger INT64_MIN = BigInteger.valueOf(Long.MIN_VALUE);
  private static final BigInteger INT64_MAX = BigInteger.valueOf(Long.MAX_VALUE);

  private RequestChecks() {}

  /** {@code stream_options} only with {@code stream} (an empty object is tolerated). */
  public static void streamOptions(StreamOptions options, boolean stream) {
    if (options != null
        && !stream
        && (options.includeUsage() != null || options.continuousUsageStats() != null))
      throw bad("Stream options can only be defined when `stream=True`.", "stream_options");
  }

  /** v0.11: {@code stream_options.include_usage} defaults to true once stream_options is sent. */
  public static boolean includeUsage(StreamOptions options, boolean stream) {
    return stream && options != null && (options.includeUsage() == null || options.includeUsage());
  }

  /** {@code prompt_logprobs}: -1 or more, and not with {@code stream}; returned as given. */
  public static Integer promptLogprobs(Integer promptLogprobs, boolean stream) {
    if (promptLogprobs != null) {
      if (promptLogprobs < -1)
        throw bad("`prompt_logprobs` must be a positive value or -1.", "prompt_logprobs");
      if (stream && (promptLogprobs > 0 || promptLogprobs == -1))
        throw bad("`prompt_logprobs` are not available when `stream=True`.", "prompt_logprobs");
    }
    return promptLogprobs;
  }

  /** {@code truncate_prompt_tokens}: -1 or more; returned as given. */
  public static Integer truncatePromptTokens(Integer truncate) {
    if (truncate != null && truncate < -1)
      throw bad(
          "Input should be greater than or equal to -1 (greater_than_equal), got " + truncate + ".",
          "truncate_prompt_tokens");
    return truncate;
  }

  /** The request's id: the {@code X-Request-Id} header, else the body's, else a random one. */
  public static String requestId(Optional<String> header, String body) {
    return header
        .filter(s -> !s.isBlank())
        .orElseGet(() -> body != null && !body.isBlank() ? body : RequestIds.random());
  }

  /** The engine's id for a request: a suffix, so equal client ids never collide in a worker. */
  public static String engineId(String requestId) {
    return requestId + "-" + RequestIds.random().substring(0, 8);
  }

  /** {@code structured_outputs}: one kind at most, and the shape of each. */
  public static void structuredOutputs(StructuredOutputs so) {
    if (so == null) return;
    Map<String, Boolean> kinds = new LinkedHashMap<>();
    kinds.put("json", so.json() != null && !so.json().isNull());
    kinds.put("regex", so.regex() != null);
    kinds.put("choice", so.choice() != null);
    kinds.put("grammar", so.grammar() != null);
    kinds.put("json_object", isTrue(so.jsonObject()));
    kinds.put("structural_tag", so.structuralTag() != null);
    List<String> set =
        kinds.entrySet().stream().filter(Map.Entry::getValue).map(Map.Entry::getKey).toList();
    if (set.size() > 1)
      throw bad(
          "You can only use one kind of structured outputs constraint but multiple are specified: "
              + set
              + ".",
          "structured_outputs");
    if (so.choice() != null && so.choice().isEmpty())
      throw bad("Choice '[]' cannot be an empty list", "structured_outputs.choice");
    if (so.grammar() != null && so.grammar().isEmpty())
      throw bad(
          "structured_outputs.grammar cannot be an empty string", "structured_outputs.grammar");
    if (so.json() != null && so.json().isTextual()) {
      try {
        JsonNode schema = Json.mapper().readTree(so.json().asText());
        if (!schema.isObject() && !schema.isBoolean()) throw new IllegalArgumentException();
      } catch (Exception e) {
        throw bad("Invalid JSON grammar specification.", "structured_outputs.json");
      }
    } else if (so.json() != null
        && !so.json().isNull()
        && !so.json().isObject()
        && !so.json().isBoolean()) {
      throw bad("Invalid JSON grammar specification.", "structured_outputs.json");
    }
  }

  /** {@code cache_salt}: a non-empty string, or absent (null). */
  public static String cacheSalt(JsonNode salt) {
    if (salt == null || salt.isNull()) return null;
    if (!salt.isTextual() || salt.asText().isEmpty())
      throw bad("Parameter 'cache_salt' must be a non-empty string if provided.", "cache_salt");
    return salt.asText();
  }

  /** {@code seed} within the signed 64-bit range; -1 and absent mean unseeded (null). */
  public static Long seed(BigInteger seed) {
    if (seed == null) return null;
    if (seed.compareTo(INT64_MIN) < 0)
      throw bad(
          "Input should be greater than or equal to " + INT64_MIN + " (greater_than_equal).",
          "seed");
    if (seed.compareTo(INT64_MAX) > 0)
      throw bad(
          "Input should be less than or equal to " + INT64_MAX + " (less_than_equal).", "seed");
    long s = seed.longValueExact();
    return s == -1 ? null : s; // vLLM: -1 means unseeded
  }

  /** {@code response_format}: a known type, and a named schema for {@code json_schema}. */
  public static void responseFormat(ResponseFormat rf) {
    if (rf == null) return;
    if (rf.type() == null)
      throw bad("Field required: `response_format.type`.", "response_format.type");
    if (!RESPONSE_FORMAT_TYPES.contains(rf.type()))
      throw bad(
          "Input should be 'text', 'json_object', 'json_schema' or 'structural_tag', got '"
              + rf.type()
              + "'.",
          "response_format.type");
    if (rf.type().equals("json_schema")) {
      if (rf.jsonSchema() == null)
        throw bad(
            "When response_format type is 'json_schema', the 'json_schema' field must be provided.",
            "response_format.json_schema");
      if (rf.jsonSchema().name() == null || rf.jsonSchema().name().isBlank())
        throw bad(
            "Field required: `response_format.json_schema.name`.",
            "response_format.json_schema.name");
    }
  }

  static boolean isTrue(Boolean b) {
    return b != null && b;
  }

  static ApiException bad(String message, String param) {
    return ApiException.badRequest(message, param);
  }
}
