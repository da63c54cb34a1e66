package dev.troupe.engine.core;

import dev.troupe.engine.sampling.BeamSearch;
import dev.troupe.scheduler.Scheduler;
import dev.troupe.scheduler.Sequence;
import java.util.HashMap;
import java.util.List;
import java.util.Map;

/**
 * Maps one request's {@link BeamSearch} onto scheduler sequences: a beam's first child continues
 * its parent's sequence, further children fork it (sharing its blocks, copy-on-write), parents no
 * child names are freed. The search steps once every live beam has its logits.
 */
final class BeamDriver {
  private final BeamSearch search;
  private List<Sequence> sequences = List.of();
  private final Map<Sequence, float[]> rows = new HashMap<>();
  private int nextIndex = 1;

  BeamDriver(BeamSearch search) {
    this.search = search;
  }

  /** The prompt is prefilled: its sequence is the one live beam. */
  void prefilled(Sequence prompt) {
    sequences = List.of(prompt);
  }

  /** The logits after {@code seq}'s last token. */
  void offer(Sequence seq, float[] row) {
    rows.put(seq, row);
  }

  boolean ready() {
    return !sequences.isEmpty() && rows.keySet().containsAll(sequences);
  }

  /**
   * Runs one search step over the offered rows and re-maps the beams onto sequences.
   *
   * @return the best beams when the search has ended (the caller frees the request), else null
   */
  List<BeamSearch.Result> step(Scheduler scheduler) {
    List<float[]> ordered = sequences.stream().map(rows::get).toList();
    rows.clear();
    List<BeamSearch.Beam> next = search.step(ordered);
    if (search.done()) return search.results();
    Sequence[] seqs = new Sequence[next.size()];
    boolean[] continued = new boolean[sequences.size()];
    for (int j = 0; j < next.size(); j++) {
      int parent = next.get(j).parent();
      Sequence p = sequences.get(parent);
      if (!continued[parent]) {
        continued[parent] = true;
        seqs[j] = p;
      } else {
        seqs[j] = scheduler.fork(p, nextIndex++);
      }
    }
    for (int p = 0; p < continued.length; p++)
      if (!continued[p]) scheduler.finish(sequences.get(p));
    for (int j = 0; j < next.size(); j++) {
      int[] tokens = next.get(j).tokens();
      seqs[j].append(tokens[tokens.length - 1]);
    }
    sequences = List.of(seqs);
    return null;
  }
}
