package dev.troupe.scheduler;

import java.util.ArrayList;
import java.util.Collections;
import java.util.List;

/**
 * One request in the scheduler: a prompt that is prefilled once, then forks into {@code n}
 * sequences (choices or beams) sharing the prompt's blocks. Preempted and resumed as a whole.
 */
public final class SequenceGroup {
  private final String requestId;
  private final int priority;
  private final long arrival;
  private final long arrivalStep;
  private final int width;
  private final CacheScope scope;
  private final List<Sequence> sequences = new ArrayList<>();
  private boolean forked;
  private int preemptions;
  private int numCachedTokens = -1;
  private int maxChunkTokens = Integer.MAX_VALUE;

  SequenceGroup(
      String requestId,
      int priority,
      long arrival,
      long arrivalStep,
      int[] prompt,
      int width,
      CacheScope scope) {
    this.requestId = requestId;
    this.priority = priority;
    this.arrival = arrival;
    this.arrivalStep = arrivalStep;
    this.width = width;
    this.scope = scope;
    sequences.add(new Sequence(this, 0, prompt, prompt.length, prompt.length));
  }

  /**
   * Computes at most {@code tokens} of its prompt per step, however large the step's budget: for a
   * request whose every prompt position needs its logits row (prompt logprobs), which would
   * otherwise hold budget x vocabulary floats at once.
   */
  public void limitChunks(int tokens) {
    if (tokens < 1) throw new IllegalArgumentException("a chunk holds at least one token");
    maxChunkTokens = tokens;
  }

  /** The most prompt tokens one step computes for it ({@link #limitChunks}; else no limit). */
  public int maxChunkTokens() {
    return maxChunkTokens;
  }

  public String requestId() {
    return requestId;
  }

  public int priority() {
    return priority;
  }

  /** Arrival order (a counter): ties in priority go to the earlier arrival. */
  public long arrival() {
    return arrival;
  }

  long arrivalStep() {
    return arrivalStep;
  }

  /** Sequences the request runs once forked (n, or the beam width). */
  public int width() {
    return width;
  }

  /** Extra keys of its blocks in the prefix cache, and whether it reads the cache. */
  public CacheScope cacheScope() {
    return scope;
  }

  /**
   * Prompt tokens found in the prefix cache when the request was first admitted (vLLM's {@code
   * num_cached_tokens}, reported as {@code usage.prompt_tokens_details.cached_tokens}); 0 before
   * admission and for requests that do not read the cache. Hits on resumption after a preemption do
   * not change it.
   */
  public int numCachedTokens() {
    return Math.max(numCachedTokens, 0);
  }

  /** Whether it has been admitted once (its cached-token count is settled). */
  boolean admittedOnce() {
    return numCachedTokens >= 0;
  }

  void setNumCachedTokens(int n) {
    numCachedTokens = n;
  }

  /** True once the prompt has been prefilled and split into its choices. */
  public boolean forked() {
    return forked;
  }

  void markForked() {
    forked = true;
  }

  public int preemptions() {
    return preemptions;
  }

  void countPreemption() {
    preemptions++;
  }

  /** All sequences, finished ones included, in creation order. */
  public List<Sequence> sequences() {
    return Collections.unmodifiableList(sequences);
  }

  void add(Sequence sequence) {
    sequences.add(sequence);
  }

  public List<Sequence> live() {
    List<Sequence> live = new ArrayList<>();
    for (Sequence s : sequences) if (!s.finished()) live.add(s);
    return live;
  }

  /** Sequence slots it occupies against {@code maxNumSeqs}: the width until forked. */
  int seats() {
    return forked ? live().size() : width;
  }

  public boolean finished() {
    for (Sequence s : sequences) if (!s.finished()) return false;
    return true;
  }

  @Override
  public String toString() {
    return requestId + "(p" + priority + ",#" + arrival + ")";
  }
}
