package dev.troupe.protocol.cluster;

import dev.troupe.protocol.CborSerializable;
import java.util.Collections;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;

/**
 * One chat generation as the worker sees it: the conversation (JSON-like values, exactly as the
 * chat template wants them), the prompt controls, and the fully-defaulted {@link SamplingParams}.
 * Built by the gateway's request mapper; never holds HTTP records.
 *
 * <p>JSON-like values are String, Number, Boolean, null, List and Map, so the record round-trips
 * through Jackson CBOR unchanged (numbers may come back as a different boxed type).
 *
 * @param requestId unique per in-flight request on a worker (the gateway adds a suffix if needed)
 * @param model the served model name the client asked for
 * @param messages conversation messages ({@code role}, {@code content}, ...); null when {@code
 *     prompt} is given instead
 * @param prompt a raw prompt string used instead of {@code messages} (no chat template); null for
 *     chat
 * @param tools tool definitions handed to the template, or null
 * @param documents RAG documents handed to the template, or null
 * @param addGenerationPrompt append the assistant header (vLLM default true)
 * @param continueFinalMessage leave the final message open; never together with addGenerationPrompt
 * @param addSpecialTokens let the tokenizer add its special tokens (BOS...) on top of the template
 * @param chatTemplate a request-supplied Jinja template, or null for the model's own
 * @param chatTemplateKwargs extra template variables (e.g. {@code enable_thinking}); never null
 * @param reasoningEffort low/medium/high handed to the template as {@code reasoning_effort}, or
 *     null
 * @param truncatePromptTokens null = off; -1 = keep the last max_model_len tokens; N = keep last N
 * @param echo the client asked for echo (implies prompt logprobs when logprobs are requested)
 * @param priority lower runs earlier (only with the priority scheduling policy; else must be 0)
 * @param cacheSalt salts the prefix cache, or null
 * @param kvTransferParams disaggregated-serving parameters, carried through; never null
 * @param sampling sampling and stopping, every default applied
 * @param returnTokenIds the client wants prompt and generated token ids
 * @param returnTokensAsTokenIds logprob token strings are written as {@code token_id:N}
 * @param adapter the trained checkpoint (LoRA adapter) to generate with, or null for the base model
 */
public record GenerationRequest(
    String requestId,
    String model,
    List<Map<String, Object>> messages,
    String prompt,
    List<Map<String, Object>> tools,
    List<Map<String, Object>> documents,
    boolean addGenerationPrompt,
    boolean continueFinalMessage,
    boolean addSpecialTokens,
    String chatTemplate,
    Map<String, Object> chatTemplateKwargs,
    String reasoningEffort,
    Integer truncatePromptTokens,
    boolean echo,
    int priority,
    String cacheSalt,
    Map<String, Object> kvTransferParams,
    SamplingParams sampling,
    boolean returnTokenIds,
    boolean returnTokensAsTokenIds,
    Adapter adapter)
    implements CborSerializable {

  /**
   * A trained model's checkpoint, served as a LoRA adapter over the worker's base model. The worker
   * loads {@code directory} (PEFT layout) the first time a request names it, or earlier when the
   * trainer announces it; a request keeps the adapter it started with to its end.
   *
   * @param modelId the trainable model's UUID
   * @param step the checkpoint step (step 0 is the base model: no directory)
   * @param directory the checkpoint directory on storage every worker node can read; null for step
   *     0
   */
  public record Adapter(String modelId, long step, String directory) implements CborSerializable {
    public Adapter {
      if (modelId == null || modelId.isBlank())
        throw new IllegalArgumentException("modelId is required");
      if (step < 0) throw new IllegalArgumentException("step must be >= 0");
      if (step > 0 && (directory == null || directory.isBlank()))
        throw new IllegalArgumentException("a step after 0 needs its checkpoint directory");
    }

    /** {@code <modelId>:step<N>}: what the response reports as {@code system_fingerprint}. */
    public String name() {
      return modelId + ":step" + step;
    }

    /** Step 0 is the untrained base model: no adapter to apply. */
    public boolean isBase() {
      return step == 0;
    }
  }

  /**
   * {@code sampling.maxTokens} when the client set no {@code max_tokens}: the worker, which knows
   * the prompt length, generates up to the context length (vLLM's default). An explicit value that
   * does not fit beside the prompt is a 400 naming {@code max_tokens}.
   */
  public static final int MAX_TOKENS_UNSET = Integer.MAX_VALUE;

  public GenerationRequest {
    if (requestId == null || requestId.isBlank())
      throw new IllegalArgumentException("requestId is required");
    if (model == null || model.isBlank()) throw new IllegalArgumentException("model is required");
    if ((messages == null) == (prompt == null))
      throw new IllegalArgumentException("exactly one of messages and prompt is required");
    if (sampling == null) throw new IllegalArgumentException("sampling is required");
    if (truncatePromptTokens != null && truncatePromptTokens < -1)
      throw new IllegalArgumentException("truncatePromptTokens must be >= -1");
    if (continueFinalMessage && addGenerationPrompt)
      throw new IllegalArgumentException(
          "continueFinalMessage and addGenerationPrompt cannot both be set");
    messages = messages == null ? null : List.copyOf(messages);
    tools = tools == null ? null : List.copyOf(tools);
    documents = documents == null ? null : List.copyOf(documents);
    chatTemplateKwargs = jsonObject(chatTemplateKwargs);
    kvTransferParams = jsonObject(kvTransferParams);
  }

  /** JSON objects may hold null values, which {@code Map.copyOf} refuses; keep insertion order. */
  private static Map<String, Object> jsonObject(Map<String, Object> map) {
    return map == null ? Map.of() : Collections.unmodifiableMap(new LinkedHashMap<>(map));
  }

  /** A chat request with vLLM's defaults for every prompt control: the common case in tests. */
  public static GenerationRequest chat(
      String requestId, String model, List<Map<String, Object>> messages, SamplingParams sampling) {
    return new GenerationRequest(
        requestId, model, messages, null, null, null, true, false, false, null, Map.of(), null,
        null, false, 0, null, Map.of(), sampling, false, false, null);
  }

  /** A copy with another priority (tests and the bench drive the scheduler through this). */
  public GenerationRequest withPriority(int newPriority) {
    return new GenerationRequest(
        requestId,
        model,
        messages,
        prompt,
        tools,
        documents,
        addGenerationPrompt,
        continueFinalMessage,
        addSpecialTokens,
        chatTemplate,
        chatTemplateKwargs,
        reasoningEffort,
        truncatePromptTokens,
        echo,
        newPriority,
        cacheSalt,
        kvTransferParams,
        sampling,
        returnTokenIds,
        returnTokensAsTokenIds,
        adapter);
  }

  /** A copy generating with {@code newAdapter} (null: the base model). */
  public GenerationRequest withAdapter(Adapter newAdapter) {
    return new GenerationRequest(
        requestId,
        model,
        messages,
        prompt,
        tools,
        documents,
        addGenerationPrompt,
        continueFinalMessage,
        addSpecialTokens,
        chatTemplate,
        chatTemplateKwargs,
        reasoningEffort,
        truncatePromptTokens,
        echo,
        priority,
        cacheSalt,
        kvTransferParams,
        sampling,
        returnTokenIds,
        returnTokensAsTokenIds,
        newAdapter);
  }
}
