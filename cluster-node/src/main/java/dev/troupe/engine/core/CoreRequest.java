package dev.troupe.engine.core;

import dev.troupe.engine.sampling.Logprobs;
import dev.troupe.engine.sampling.Sampler;
import dev.troupe.engine.sampling.StepLogprobs;
import dev.troupe.engine.sampling.StopTokens;
import dev.troupe.engine.sampling.TokenLogprob;
import dev.troupe.protocol.cluster.SamplingParams;
import dev.troupe.scheduler.ScheduleResult.ScheduledChunk;
import dev.troupe.scheduler.Sequence;
import dev.troupe.scheduler.SequenceGroup;
import java.util.ArrayList;
import java.util.List;

/**
 * A request inside the engine core: its scheduler group, per choice a sampler and the token stops,
 * or a beam-search driver, and the prompt logprobs gathered while its prompt is prefilled.
 *
 * <p>Everything a resumed request (migration) would need to rebuild is here: replaying a choice's
 * generated tokens through {@link Sampler#accept} and {@link StopTokens#check}, and one random draw
 * per random step, restores its sampler exactly.
 */
final class CoreRequest {
  final EngineRequest request;
  final SequenceGroup group;
  final Choice[] choices;
  final BeamDriver beam;
  final List<StepLogprobs> promptLogprobs;
  boolean started;
  int forwardFailures;
  // Engine-clock timestamps for the latency histograms (LatencyStats), nanoseconds; 0 = not yet.
  long queuedAt;
  long scheduledAt;
  long firstTokenAt;
  long lastTokenAt;
  boolean counted;

  CoreRequest(EngineRequest request, SequenceGroup group, Choice[] choices, BeamDriver beam) {
    this.request = request;
    this.group = group;
    this.choices = choices;
    this.beam = beam;
    if (request.sampling().promptLogprobs() != null) {
      promptLogprobs = new ArrayList<>(request.promptTokenIds().length);
      promptLogprobs.add(null); // vLLM: nothing predicts the first prompt token
    } else {
      promptLogprobs = null;
    }
  }

  String id() {
    return request.requestId();
  }

  SamplingParams params() {
    return request.sampling();
  }

  int[] prompt() {
    return request.promptTokenIds();
  }

  boolean allFinished() {
    for (Choice c : choices) if (!c.finished) return false;
    return true;
  }

  /** Whether this chunk's rows are needed for prompt logprobs not yet gathered. */
  boolean wantsPromptLogits(ScheduledChunk c) {
    return promptLogprobs != null
        && promptLogprobs.size() < prompt().length
        && c.start() < prompt().length;
  }

  /** Row j of a chunk predicts the token at position start + j + 1. */
  void collectPromptLogprobs(ScheduledChunk chunk, float[][] rows) {
    int k = params().promptLogprobs();
    int[] prompt = prompt();
    for (int j = 0; j < rows.length; j++) {
      int position = chunk.start() + j + 1;
      if (position >= prompt.length) break;
      if (position < promptLogprobs.size()) continue; // known already (recompute after preemption)
      List<TokenLogprob> entries =
          Logprobs.entries(rows[j], 0, rows[j].length, prompt[position], k);
      promptLogprobs.add(new StepLogprobs(entries.get(0), entries));
    }
  }

  /** One choice's sampling and token-stop state. */
  static final class Choice {
    final Sampler sampler; // null for beam search
    final StopTokens stops;
    Sequence sequence; // once the prompt is prefilled and forked
    boolean finished;

    Choice(Sampler sampler, StopTokens stops) {
      this.sampler = sampler;
      this.stops = stops;
    }
  }
}
