package dev.troupe.engine.core;

import dev.troupe.engine.sampling.SamplingSetup;
import dev.troupe.protocol.cluster.SamplingParams;

/**
 * A request ready for the engine core, made by the input processor: the prompt as token ids and
 * everything resolved, so that admitting it costs the engine thread nothing. Plain data (the
 * sampling setup holds the request's constructed logits processors).
 *
 * @param requestId unique among the requests in flight on this replica
 * @param promptTokenIds the prompt after templating, tokenizing and truncation; within the context
 * @param sampling resolved sampling parameters ({@link SamplingParams#resolved()}); {@code
 *     maxTokens} fits beside the prompt
 * @param setup the samplers' prepared parts (bad words, processors, token constraints)
 * @param priority lower runs earlier under the priority policy (0 under FCFS)
 * @param cacheSalt the request's {@code cache_salt} for the prefix cache, or null
 * @param adapterId the LoRA adapter every chunk runs with (0 = the base model); set by the worker
 * @param adapterKey what identifies that adapter's weights ({@code <model id>:step<N>}), for the
 *     prefix cache's keys; null for the base model
 * @param weightVersion the checkpoint step generating it (reported to the client)
 * @param returnPromptTokenIds the client asked for the prompt's token ids
 * @param logprobTokenIds logprob tokens are written {@code token_id:N} instead of their text
 * @param resumed the output a lost replica already delivered, to replay before generating (request
 *     migration); null for a new request
 * @param parsing how the output processor splits the text (reasoning, tool calls)
 */
public record EngineRequest(
    String requestId,
    int[] promptTokenIds,
    SamplingParams sampling,
    SamplingSetup setup,
    int priority,
    String cacheSalt,
    int adapterId,
    String adapterKey,
    long weightVersion,
    boolean returnPromptTokenIds,
    boolean logprobTokenIds,
    Resumed resumed,
    TextParsing parsing) {

  /**
   * What a request continued from another replica had already delivered, per choice: its tokens and
   * whether it had finished. The core and the output processor replay the tokens (sampler, token
   * stops, detokenizer, stop strings; nothing is emitted) before the request generates.
   */
  public record Resumed(int[][] tokens, boolean[] finished) {
    public Resumed {
      if (tokens.length != finished.length)
        throw new IllegalArgumentException("one finished flag per choice");
    }

    /** Tokens delivered, over every choice. */
    public int totalTokens() {
      int total = 0;
      for (int[] t : tokens) total += t.length;
      return total;
    }
  }

  public EngineRequest {
    if (requestId == null || requestId.isBlank())
      throw new IllegalArgumentException("requestId is required");
    if (promptTokenIds == null || promptTokenIds.length == 0)
      throw new IllegalArgumentException("the prompt is empty");
    if (sampling == null || !sampling.resolved())
      throw new IllegalArgumentException("sampling parameters must be resolved");
    if (sampling.maxTokens() == null)
      throw new IllegalArgumentException("maxTokens must be capped by the context");
    if (setup == null) throw new IllegalArgumentException("setup is required");
    if (adapterId < 0) throw new IllegalArgumentException("adapterId must be >= 0");
    if (resumed != null && resumed.tokens().length != sampling.n())
      throw new IllegalArgumentException("a resumed request needs one entry per choice");
    if (parsing == null) parsing = TextParsing.NONE;
  }

  /**
   * This request on LoRA adapter {@code id} (0 = base) whose weights {@code key} names, reporting
   * {@code version}.
   */
  public EngineRequest withAdapter(int id, String key, long version) {
    return new EngineRequest(
        requestId,
        promptTokenIds,
        sampling,
        setup,
        priority,
        cacheSalt,
        id,
        key,
        version,
        returnPromptTokenIds,
        logprobTokenIds,
        resumed,
        parsing);
  }
}
