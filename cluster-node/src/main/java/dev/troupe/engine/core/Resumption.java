package dev.troupe.engine.core;

import dev.troupe.engine.sampling.StopChecker.Finish;
import dev.troupe.scheduler.Scheduler;
import dev.troupe.scheduler.Sequence;

/**
 * How the core takes a request migrated from a lost replica ({@link EngineRequest#resumed()}): each
 * choice's delivered tokens are replayed through its sampler and token stops, and the request is
 * split into its choices at once, each sequence holding prompt + its tokens. Nothing is sampled or
 * emitted for the replayed tokens.
 */
final class Resumption {
  private Resumption() {}

  /**
   * Replays each choice's delivered tokens ({@code Sampler.replay}, {@code StopTokens.check}). An
   * open choice whose tokens would already have ended it means the replicas disagree about the
   * request: refused rather than continued differently.
   */
  static Rejection replay(EngineRequest.Resumed resumed, CoreRequest.Choice[] choices) {
    for (int i = 0; i < choices.length; i++) {
      CoreRequest.Choice c = choices[i];
      int[] tokens = resumed.tokens()[i];
      for (int j = 0; j < tokens.length; j++) {
        try {
          c.sampler.replay(tokens[j]); // advances a structured-output matcher too
        } catch (IllegalStateException refused) {
          return Rejection.internal(
              "The request cannot be resumed on this replica: token "
                  + j
                  + " of choice "
                  + i
                  + " is not allowed by its structured-output constraint here.");
        }
        Finish f = c.stops.check(tokens[j]);
        String ends = f != null ? f.reason().name() : null;
        if (ends == null && c.sampler.constraintFinished()) ends = "its constraint is complete";
        if (ends != null && !resumed.finished()[i])
          return Rejection.internal(
              "The request cannot be resumed on this replica: token "
                  + j
                  + " of choice "
                  + i
                  + " ends the choice here ("
                  + ends
                  + ") but did not on the first replica.");
      }
      c.finished = resumed.finished()[i];
    }
    return null;
  }

  /**
   * Forks the request's group into its choices before anything is computed: the scheduler then
   * prefills each sequence as it resumes a preempted request, and each open choice's next token
   * comes from the logits after its last delivered one.
   */
  static void fork(CoreRequest r, Scheduler scheduler) {
    Sequence first = r.group.sequences().get(0);
    for (int i = 1; i < r.choices.length; i++) r.choices[i].sequence = scheduler.fork(first, i);
    r.choices[0].sequence = first;
    scheduler.markForked(r.group);
    int[][] tokens = r.request.resumed().tokens();
    for (int i = 0; i < r.choices.length; i++) {
      for (int t : tokens[i]) r.choices[i].sequence.append(t);
      if (r.choices[i].finished) scheduler.finish(r.choices[i].sequence);
    }
    r.started = true; // its client has had output: running out of cache ends it, never a 400
  }
}
