package dev.troupe.gateway.chat;

import com.fasterxml.jackson.core.type.TypeReference;
import com.fasterxml.jackson.databind.JsonNode;
import dev.troupe.gateway.http.ApiException;
import dev.troupe.protocol.Json;
import dev.troupe.protocol.api.SamplingFields;
import dev.troupe.protocol.cluster.RequestLimits;
import dev.troupe.protocol.cluster.SamplingParams;
import dev.troupe.protocol.cluster.SamplingParams.LogitsProcessorSpec;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;

/**
 * The sampling half of {@link ChatRequestMapper} (and of the completions API's mapper): a request's
 * sampling fields → {@link SamplingParams}, with the shape, range and cross-field rules of vLLM's
 * {@code to_sampling_params} on them ({@code n}, {@code max_tokens}/{@code max_completion_tokens}
 * and {@code min_tokens}, logprob limits, {@code stop}, token ids, {@code logit_bias}, {@code
 * bad_words}, {@code logits_processors}, {@code engine_xargs}). The value rules of the fields a
 * model may default are {@link SamplingParams}'s own (its refusal names the field); what needs the
 * model (vocabulary, context length) is the worker's input processor's.
 *
 * <p>A new sampling field touches four files: {@link SamplingFields} and the request records that
 * implement it (the HTTP field), this class (its shape rules and the builder call) and {@link
 * SamplingParams} (component, builder, value rules); then the engine code that acts on it.
 *
 * <p>Pure and thread-safe: no I/O, no state.
 */
public final class ChatSamplingMapper {
  /** vLLM's {@code --max-logprobs} default. */
  public static final int MAX_LOGPROBS = 20;

  /** vLLM's {@code VLLM_MAX_N_SEQUENCES} default. */
  public static final int MAX_N = 16384;

  private static final TypeReference<Map<String, Object>> JSON_OBJECT = new TypeReference<>() {};

  private ChatSamplingMapper() {}

  /**
   * The request's sampling fields as {@link SamplingParams}; the arguments after {@code r} are what
   * the request's mapper already checked or derived (its API's rules for them differ).
   *
   * @param logprobs whether sampled tokens' logprobs are asked for
   * @param topLogprobs alternatives per sampled token (null: 0)
   * @param promptLogprobs the prompt logprobs asked for, {@code echo}'s default applied, or null
   * @param requestedMax the tokens to generate per choice as the API reads its fields (chat: {@code
   *     max_completion_tokens}, else {@code max_tokens}), or null for what the context leaves
   * @param maxParam the field {@code requestedMax} came from, named in its 400s
   */
  public static SamplingParams map(
      SamplingFields r,
      Long seed,
      boolean logprobs,
      Integer topLogprobs,
      Integer promptLogprobs,
      Integer requestedMax,
      String maxParam) {
    // Absent (or null) fields stay null: the worker applies the model's generation-config
    // default, else OpenAI's. SamplingParams itself checks the values present (and normalizes
    // them as vLLM does); its refusal names the field.
    double lengthPenalty =
        r.lengthPenalty() == null ? 1.0 : finite(r.lengthPenalty(), "length_penalty");

    boolean beam = isTrue(r.useBeamSearch());
    int n = r.n() == null ? 1 : r.n();
    if (n < 1) throw bad("n must be at least 1, got " + n + ".", "n");
    if (n > MAX_N) throw bad("n must be at most " + MAX_N + ", got " + n + ".", "n");

    if (requestedMax != null && requestedMax < 1)
      throw bad("max_tokens must be at least 1, got " + requestedMax + ".", maxParam);
    // Absent (null): as many as the context leaves. Whether it fits beside the prompt is the
    // worker's rule.
    Integer maxTokens = requestedMax;
    int minTokens = r.minTokens() == null ? 0 : r.minTokens();
    if (minTokens < 0)
      throw bad(
          "min_tokens must be greater than or equal to 0, got " + minTokens + ".", "min_tokens");
    if (requestedMax != null && minTokens > maxTokens)
      throw bad(
          "min_tokens must be less than or equal to max_tokens="
              + maxTokens
              + ", got "
              + minTokens
              + ".",
          "min_tokens");

    Integer sampleLogprobs = null;
    if (logprobs) {
      int k = topLogprobs == null ? 0 : topLogprobs;
      if (k == -1 || k > MAX_LOGPROBS)
        throw bad(
            "Requested sample logprobs of "
                + (k == -1 ? "-1 (the whole vocabulary)" : k)
                + ", which is greater than max allowed: "
                + MAX_LOGPROBS,
            "top_logprobs");
      sampleLogprobs = k;
    }
    Integer prompt = promptLogprobs;
    if (prompt != null && (prompt == -1 || prompt > MAX_LOGPROBS))
      throw bad(
          "Requested prompt logprobs of "
              + (prompt == -1 ? "-1 (the whole vocabulary)" : prompt)
              + ", which is greater than max allowed: "
              + MAX_LOGPROBS,
          "prompt_logprobs");

    List<String> stop = stopStrings(r.stop());
    List<Integer> stopTokenIds = nonNegativeIds(r.stopTokenIds(), "stop_token_ids");
    List<Integer> allowed = r.allowedTokenIds();
    if (allowed != null && !allowed.isEmpty())
      allowed = nonNegativeIds(allowed, "allowed_token_ids"); // empty: SamplingParams refuses it
    List<String> badWords = r.badWords() == null ? List.of() : r.badWords();
    for (int i = 0; i < badWords.size(); i++)
      if (badWords.get(i) == null || badWords.get(i).isEmpty())
        throw bad("bad_words must not contain empty strings.", "bad_words[" + i + "]");

    SamplingParams.Builder b =
        SamplingParams.builder()
            .n(n)
            .temperature(r.temperature())
            .topP(r.topP())
            .topK(r.topK())
            .minP(r.minP())
            .presencePenalty(r.presencePenalty())
            .frequencyPenalty(r.frequencyPenalty())
            .repetitionPenalty(r.repetitionPenalty())
            .seed(seed)
            .maxTokens(maxTokens)
            .minTokens(minTokens)
            .stop(stop)
            .stopTokenIds(stopTokenIds)
            .includeStopStrInOutput(isTrue(r.includeStopStrInOutput()))
            .ignoreEos(isTrue(r.ignoreEos()))
            .logprobs(sampleLogprobs)
            .promptLogprobs(prompt)
            .skipSpecialTokens(r.skipSpecialTokens() == null || r.skipSpecialTokens())
            .spacesBetweenSpecialTokens(
                r.spacesBetweenSpecialTokens() == null || r.spacesBetweenSpecialTokens())
            .logitBias(logitBias(r.logitBias()))
            .allowedTokenIds(allowed)
            .badWords(badWords)
            .useBeamSearch(beam)
            .lengthPenalty(lengthPenalty)
            .logitsProcessors(logitsProcessors(r.logitsProcessors()))
            .engineXargs(engineXargs(r.engineXargs()));
    try {
      return b.build();
    } catch (SamplingParams.InvalidValue e) {
      throw bad(e.getMessage(), e.param());
    }
  }

  private static List<String> stopStrings(JsonNode stop) {
    if (stop == null || stop.isNull()) return List.of();
    if (stop.isTextual()) {
      if (stop.asText().isEmpty()) throw bad("`stop` must not contain empty strings.", "stop");
      return List.of(stop.asText());
    }
    if (!stop.isArray()) throw bad("`stop` must be a string or a list of strings.", "stop");
    List<String> out = new ArrayList<>();
    for (int i = 0; i < stop.size(); i++) {
      JsonNode s = stop.get(i);
      if (!s.isTextual())
        throw bad("`stop` must be a string or a list of strings.", "stop[" + i + "]");
      if (s.asText().isEmpty())
        throw bad("`stop` must not contain empty strings.", "stop[" + i + "]");
      out.add(s.asText());
    }
    return out;
  }

  private static List<Integer> nonNegativeIds(List<Integer> ids, String param) {
    if (ids == null) return List.of();
    for (int i = 0; i < ids.size(); i++)
      if (ids.get(i) == null || ids.get(i) < 0)
        throw bad(
            "Token ids must be non-negative integers, got " + ids.get(i) + ".",
            param + "[" + i + "]");
    return ids;
  }

  private static Map<Integer, Double> logitBias(Map<String, Double> bias) {
    if (bias == null) return Map.of();
    Map<Integer, Double> out = new LinkedHashMap<>();
    List<String> badKeys = new ArrayList<>();
    for (Map.Entry<String, Double> e : bias.entrySet()) {
      int id;
      try {
        id = Integer.parseInt(e.getKey().trim());
      } catch (NumberFormatException ex) {
        badKeys.add(e.getKey());
        continue;
      }
      if (id < 0) {
        badKeys.add(e.getKey());
        continue;
      }
      if (e.getValue() == null || !Double.isFinite(e.getValue()))
        throw bad("logit_bias values must be finite numbers.", "logit_bias");
      out.put(id, Math.max(-100.0, Math.min(100.0, e.getValue()))); // clamped as in vLLM
    }
    if (!badKeys.isEmpty())
      throw bad(
          "logit_bias keys must be token ids (non-negative integers); invalid: " + badKeys,
          "logit_bias");
    return out;
  }

  private static List<LogitsProcessorSpec> logitsProcessors(List<JsonNode> specs) {
    if (specs == null) return List.of();
    // counted before each is converted (SamplingParams checks the same bound again)
    ChatRequestMapper.limit(
        specs.size(), RequestLimits.LOGITS_PROCESSORS, "logits_processors", "entries");
    List<LogitsProcessorSpec> out = new ArrayList<>();
    for (int i = 0; i < specs.size(); i++) {
      JsonNode s = specs.get(i);
      String at = "logits_processors[" + i + "]";
      if (s != null && s.isTextual() && !s.asText().isBlank()) {
        out.add(new LogitsProcessorSpec(s.asText(), List.of(), Map.of()));
        continue;
      }
      if (s == null || !s.isObject())
        throw bad("Each logits processor is a qualified name or an object with `qualname`.", at);
      JsonNode qualname = s.get("qualname");
      if (qualname == null || !qualname.isTextual() || qualname.asText().isBlank())
        throw bad("Field required: `qualname` (a string).", at + ".qualname");
      JsonNode args = s.get("args");
      if (args != null && !args.isNull() && !args.isArray())
        throw bad("`args` must be an array.", at + ".args");
      JsonNode kwargs = s.get("kwargs");
      if (kwargs != null && !kwargs.isNull() && !kwargs.isObject())
        throw bad("`kwargs` must be an object.", at + ".kwargs");
      List<Object> argList =
          args == null || args.isNull()
              ? List.of()
              : Json.mapper().convertValue(args, new TypeReference<List<Object>>() {});
      Map<String, Object> kwMap =
          kwargs == null || kwargs.isNull()
              ? Map.of()
              : Json.mapper().convertValue(kwargs, JSON_OBJECT);
      // (List.of()/Map.of() refuse contains(null) with an NPE, hence the streams)
      if (argList.stream().anyMatch(java.util.Objects::isNull)
          || kwMap.values().stream().anyMatch(java.util.Objects::isNull))
        throw bad("Logits processor arguments must not be null.", at);
      out.add(new LogitsProcessorSpec(qualname.asText(), argList, kwMap));
    }
    return out;
  }

  private static Map<String, Object> engineXargs(Map<String, Object> xargs) {
    if (xargs == null) return Map.of();
    for (Map.Entry<String, Object> e : xargs.entrySet()) {
      Object v = e.getValue();
      boolean ok =
          isScalar(v)
              || (v instanceof List<?> list
                  && list.stream().allMatch(ChatSamplingMapper::isScalar));
      if (!ok)
        throw bad(
            "engine_xargs values must be strings, numbers, or lists of them.",
            "engine_xargs." + e.getKey());
    }
    return xargs;
  }

  private static boolean isScalar(Object v) {
    return v instanceof String || v instanceof Number || v instanceof Boolean;
  }

  private static double finite(double v, String param) {
    if (!Double.isFinite(v)) throw bad(param + " must be a finite number, got " + v + ".", param);
    return v;
  }

  private static boolean isTrue(Boolean b) {
    return b != null && b;
  }

  private static ApiException bad(String message, String param) {
    return ApiException.badRequest(message, param);
  }
}
