package dev.troupe.gateway.completions;

import dev.troupe.protocol.cluster.GenerationRequest;
import java.util.List;

/**
 * A validated {@code /v1/completions} request, converted: one generation per prompt, and how to
 * shape the answer.
 *
 * @param prompts the prompts in request order, each with its generation
 * @param responseId {@code cmpl-<id>}
 * @param model the model name written into the answer
 * @param n choices per prompt (choice {@code i} of prompt {@code p} is answer choice {@code p * n +
 *     i})
 * @param echo the prompt is written before each choice's text (and its tokens' logprobs first)
 * @param echoOnly {@code echo} with {@code max_tokens: 0}: the prompt alone (one token is generated
 *     and not shown, as vLLM does)
 * @param stream answer as server-sent events
 * @param wholeStream a stream that is sent as one event holding the whole answer (beam search, as
 *     vLLM)
 * @param includeUsage streamed: send the usage chunk at the end
 * @param continuousUsage streamed: every chunk carries its choice's running usage
 * @param logprobs {@code logprobs}: alternatives per token, or null when not asked
 * @param returnTokenIds write {@code prompt_token_ids} and {@code token_ids}
 * @param tokenIdsAsText logprob tokens are written {@code token_id:N}
 * @param systemFingerprint the served checkpoint ({@code <model id>:step<N>}) of a trained model,
 *     else null
 */
public record CompletionPlan(
    List<Prompt> prompts,
    String responseId,
    String model,
    int n,
    boolean echo,
    boolean echoOnly,
    boolean stream,
    boolean wholeStream,
    boolean includeUsage,
    boolean continuousUsage,
    Integer logprobs,
    boolean returnTokenIds,
    boolean tokenIdsAsText,
    String systemFingerprint) {

  /**
   * One prompt.
   *
   * @param generation what its workers run
   * @param text the prompt as the client sent it, or null when it was token ids
   * @param tokenIds the prompt's ids when the client sent ids, else null
   */
  public record Prompt(GenerationRequest generation, String text, List<Integer> tokenIds) {
    public Prompt {
      if (generation == null) throw new IllegalArgumentException("generation is required");
      tokenIds = tokenIds == null ? null : List.copyOf(tokenIds);
    }
  }

  public CompletionPlan {
    prompts = List.copyOf(prompts);
    if (prompts.isEmpty()) throw new IllegalArgumentException("a prompt is required");
  }

  /**
   * This plan run on a trained model's checkpoint: the workers apply {@code adapter}, the answer
   * echoes the client's {@code clientModel} and reports the step as its system fingerprint.
   */
  public CompletionPlan withAdapter(GenerationRequest.Adapter adapter, String clientModel) {
    return new CompletionPlan(
        prompts.stream()
            .map(p -> new Prompt(p.generation().withAdapter(adapter), p.text(), p.tokenIds()))
            .toList(),
        responseId,
        clientModel,
        n,
        echo,
        echoOnly,
        stream,
        wholeStream,
        includeUsage,
        continuousUsage,
        logprobs,
        returnTokenIds,
        tokenIdsAsText,
        adapter.name());
  }
}
