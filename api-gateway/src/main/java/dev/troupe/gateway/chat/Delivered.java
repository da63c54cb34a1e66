package dev.troupe.gateway.chat;

import dev.troupe.protocol.cluster.GenerationRequest;
import dev.troupe.protocol.cluster.GenerationRequest.Resume;
import dev.troupe.protocol.cluster.GenerationRequest.ResumedChoice;
import dev.troupe.protocol.cluster.ModelWorkerProtocol.ChoiceUpdate;
import dev.troupe.protocol.cluster.ModelWorkerProtocol.GenerationUpdate;
import java.util.ArrayList;
import java.util.List;

/**
 * What a generation's client has received so far, across every attempt of its {@link
 * GenerationOwner}: per choice the token ids passed on and whether the choice ended, and whether it
 * saw its one {@code Started}. What a continuation resumes from. Confined to the owner's actor.
 */
final class Delivered {
  private final String requestId;
  private final boolean beam;
  private final List<List<Integer>> tokens = new ArrayList<>();
  private final boolean[] finished;
  private boolean started;

  Delivered(GenerationRequest request) {
    this.requestId = request.requestId();
    this.beam = request.sampling().useBeamSearch();
    int n = request.sampling().n();
    for (int i = 0; i < n; i++) tokens.add(new ArrayList<>());
    this.finished = new boolean[n];
  }

  /**
   * Records a worker's update and returns it as the client sees it: under the client's request id,
   * and without the {@code Started} of a continuation (the client saw one; a continuation's only
   * says who serves it now).
   */
  GenerationUpdate add(GenerationUpdate u) {
    for (ChoiceUpdate c : u.choices()) {
      tokens.get(c.index()).addAll(c.tokenIds());
      if (c.finished()) finished[c.index()] = true;
    }
    // the KV handle names the worker's own request id (its lease), not the client's
    GenerationUpdate seen =
        new GenerationUpdate(
            requestId, started ? null : u.started(), u.choices(), u.usage(), u.kvHandle());
    started |= u.started() != null;
    return seen;
  }

  /**
   * What a continuation resumes from: null when the request starts over (nothing yet, or beams).
   */
  Resume resume() {
    if (!started || beam) return null;
    List<ResumedChoice> choices = new ArrayList<>(tokens.size());
    for (int i = 0; i < tokens.size(); i++)
      choices.add(new ResumedChoice(tokens.get(i), finished[i]));
    return new Resume(choices);
  }
}
