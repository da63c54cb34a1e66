package dev.troupe.gateway.chat;

import dev.troupe.protocol.cluster.GenerationRequest;
import dev.troupe.protocol.cluster.ToolCalling;

/**
 * A validated chat request, converted: what to ask the worker, and how to shape the answer.
 *
 * @param generation the worker's request, every default applied
 * @param responseId {@code chatcmpl-<id>}: the {@code X-Request-Id} header, else the body's {@code
 *     request_id}, else a random id
 * @param model the served model name written into the response
 * @param responseRole {@code assistant}, or the last message's role without a generation prompt
 * @param echoText the text echoed before the generated text ({@code echo} with a last message of
 *     the response role), else null
 * @param stream answer as server-sent events
 * @param includeUsage streamed: send the usage chunk at the end
 * @param continuousUsage streamed: every chunk carries the running usage
 * @param logprobs write {@code choices[].logprobs}
 * @param topLogprobs alternatives per token when {@code logprobs}
 * @param promptLogprobs write the top-level {@code prompt_logprobs}
 * @param returnTokenIds write {@code prompt_token_ids} and {@code token_ids}
 * @param includeReasoning write reasoning text (none is produced without a reasoning parser)
 * @param systemFingerprint written as {@code system_fingerprint}: the served checkpoint ({@code
 *     <model id>:step<N>}) of a trained model, else null
 * @param parsed the text is split (a reasoning parser, or tool calls): vLLM's parsing paths shape
 *     the answer (empty content is null, steps with no news are skipped)
 * @param toolMode how tool calls are made ({@code REQUIRED}/{@code NAMED}: content is "")
 */
public record ChatPlan(
    GenerationRequest generation,
    String responseId,
    String model,
    String responseRole,
    String echoText,
    boolean stream,
    boolean includeUsage,
    boolean continuousUsage,
    boolean logprobs,
    int topLogprobs,
    boolean promptLogprobs,
    boolean returnTokenIds,
    boolean includeReasoning,
    String systemFingerprint,
    boolean parsed,
    ToolCalling.Mode toolMode) {

  public ChatPlan {
    if (generation == null) throw new IllegalArgumentException("generation is required");
    if (responseId == null || responseId.isBlank())
      throw new IllegalArgumentException("responseId is required");
    if (toolMode == null) toolMode = ToolCalling.Mode.NONE;
  }

  /**
   * This plan run on a trained model's checkpoint: the worker applies {@code adapter}, the response
   * echoes the client's {@code clientModel} and reports the step as its system fingerprint.
   */
  public ChatPlan withAdapter(GenerationRequest.Adapter adapter, String clientModel) {
    return new ChatPlan(
        generation.withAdapter(adapter),
        responseId,
        clientModel,
        responseRole,
        echoText,
        stream,
        includeUsage,
        continuousUsage,
        logprobs,
        topLogprobs,
        promptLogprobs,
        returnTokenIds,
        includeReasoning,
        adapter.name(),
        parsed,
        toolMode);
  }
}
