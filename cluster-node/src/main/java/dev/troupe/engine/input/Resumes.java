package dev.troupe.engine.input;

import dev.troupe.engine.core.EngineRequest;
import dev.troupe.engine.core.Rejection;
import dev.troupe.protocol.cluster.GenerationRequest.Resume;
import dev.troupe.protocol.cluster.GenerationRequest.ResumedChoice;
import dev.troupe.protocol.cluster.SamplingParams;
import java.util.List;

/**
 * Checks a migrated request's delivered output against this replica's view of the request (its
 * prompt, its resolved {@code max_tokens}, the vocabulary) and turns it into the engine's {@link
 * EngineRequest.Resumed}. A mismatch means the replicas disagree on the model, which no client can
 * cause: a 500, never a silently different continuation.
 */
final class Resumes {
  private Resumes() {}

  static EngineRequest.Resumed prepare(Resume resume, SamplingParams params, int vocabSize) {
    if (params.useBeamSearch())
      throw cannot("beam search reports its beams at the end and restarts instead");
    List<ResumedChoice> choices = resume.choices();
    if (choices.size() != params.n())
      throw cannot(choices.size() + " resumed choices for n = " + params.n());
    int[][] tokens = new int[choices.size()][];
    boolean[] finished = new boolean[choices.size()];
    boolean open = false;
    for (int i = 0; i < tokens.length; i++) {
      ResumedChoice c = choices.get(i);
      int count = c.tokenIds().size();
      // an open choice has room for at least one more token, else it would have ended
      if (c.finished() ? count > params.maxTokens() : count >= params.maxTokens())
        throw cannot(
            "choice " + i + " has " + count + " tokens for max_tokens " + params.maxTokens());
      tokens[i] = new int[count];
      for (int j = 0; j < count; j++) {
        int id = c.tokenIds().get(j);
        if (id < 0 || id >= vocabSize)
          throw cannot("token id " + id + " of choice " + i + " is outside the vocabulary");
        tokens[i][j] = id;
      }
      finished[i] = c.finished();
      open |= !c.finished();
    }
    if (!open) throw cannot("every choice has finished");
    return new EngineRequest.Resumed(tokens, finished);
  }

  private static Rejection cannot(String why) {
    return Rejection.internal("The request cannot be resumed on this replica: " + why + ".");
  }
}
