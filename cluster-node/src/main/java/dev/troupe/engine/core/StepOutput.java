package dev.troupe.engine.core;

import dev.troupe.engine.sampling.StepLogprobs;
import dev.troupe.engine.sampling.StopChecker;
import java.util.ArrayList;
import java.util.Collections;
import java.util.List;

/**
 * What one engine-core step produced: per request that has news, its new token ids, finishes and
 * logprobs as ids and floats (no text: that is the output processor's), and the requests that
 * failed on their own.
 *
 * @param outputs one entry per request with news, in the order the step met them
 * @param failures requests the core gave up (they have left the core; nothing more follows)
 */
public record StepOutput(List<RequestOutput> outputs, List<Failure> failures) {
  public static final StepOutput EMPTY = new StepOutput(List.of(), List.of());

  public StepOutput {
    outputs = List.copyOf(outputs);
    failures = List.copyOf(failures);
  }

  /**
   * One request's news of one step.
   *
   * @param first the request's prompt finished prefilling in this step: its first output
   * @param promptLogprobs with the first output when the request asked for them: one entry per
   *     prompt token, the first null (nothing predicts it); else null
   * @param choices the choices with news, in index order
   * @param finished every choice has finished: the request has left the core
   * @param cachedPromptTokens prompt tokens found in the prefix cache when the request was admitted
   */
  public record RequestOutput(
      String requestId,
      boolean first,
      List<StepLogprobs> promptLogprobs,
      List<ChoiceOutput> choices,
      boolean finished,
      int cachedPromptTokens) {
    public RequestOutput {
      promptLogprobs =
          promptLogprobs == null
              ? null
              : Collections.unmodifiableList(new ArrayList<>(promptLogprobs));
      choices = List.copyOf(choices);
    }
  }

  /**
   * One choice's news.
   *
   * @param tokenIds the tokens generated in this step (one, or none when the choice only ends); for
   *     a beam-search result ({@code whole}) every token of the choice
   * @param logprobs one entry per token when the request asked for logprobs, else null
   * @param finish why the choice ended with this step, or null while it runs (never a stop string:
   *     those are the output processor's)
   * @param whole the tokens are the choice's whole output (beam search reports its beams at the
   *     end), not an increment
   */
  public record ChoiceOutput(
      int index,
      int[] tokenIds,
      List<StepLogprobs> logprobs,
      StopChecker.Finish finish,
      boolean whole) {
    public ChoiceOutput {
      logprobs = logprobs == null ? null : List.copyOf(logprobs);
    }
  }

  /** A request that failed alone (its own data, or a forward pass that kept failing on it). */
  public record Failure(String requestId, Rejection rejection) {}
}
