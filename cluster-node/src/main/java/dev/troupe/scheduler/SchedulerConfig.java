package dev.troupe.scheduler;

/**
 * Limits of one scheduler (one model replica).
 *
 * @param maxNumSeqs most sequences (choices) running at once; a request with n choices counts n
 * @param maxNumBatchedTokens token budget of one step: prefill chunks plus one token per decode
 * @param maxWaiting bounded waiting queue; a request beyond it is refused (overload)
 * @param policy admission and preemption order
 * @param chunkedPrefill split long prompts over several steps; off = a prompt runs in one step and
 *     must fit the budget
 * @param agingSteps with the priority policy, a request's effective priority drops by one every
 *     this many steps since it arrived, so low-priority work cannot starve; 0 = no aging
 * @param prefixCaching reuse the KV blocks of cached prompt prefixes ({@link PrefixCache}); vLLM's
 *     {@code --enable-prefix-caching}, on by default
 */
public record SchedulerConfig(
    int maxNumSeqs,
    int maxNumBatchedTokens,
    int maxWaiting,
    SchedulingPolicy policy,
    boolean chunkedPrefill,
    int agingSteps,
    boolean prefixCaching) {

  public SchedulerConfig {
    if (maxNumSeqs < 1) throw new IllegalArgumentException("maxNumSeqs must be >= 1");
    if (maxNumBatchedTokens < 1)
      throw new IllegalArgumentException("maxNumBatchedTokens must be >= 1");
    if (maxWaiting < 0) throw new IllegalArgumentException("maxWaiting must be >= 0");
    if (policy == null) throw new IllegalArgumentException("policy is required");
    if (agingSteps < 0) throw new IllegalArgumentException("agingSteps must be >= 0");
  }

  /** With prefix caching on. */
  public SchedulerConfig(
      int maxNumSeqs,
      int maxNumBatchedTokens,
      int maxWaiting,
      SchedulingPolicy policy,
      boolean chunkedPrefill,
      int agingSteps) {
    this(maxNumSeqs, maxNumBatchedTokens, maxWaiting, policy, chunkedPrefill, agingSteps, true);
  }

  /** FCFS with chunked prefill and prefix caching, as vLLM v1 runs by default. */
  public static SchedulerConfig fcfs(int maxNumSeqs, int maxNumBatchedTokens, int maxWaiting) {
    return new SchedulerConfig(
        maxNumSeqs, maxNumBatchedTokens, maxWaiting, SchedulingPolicy.FCFS, true, 0, true);
  }

  /** This configuration with prefix caching on or off. */
  public SchedulerConfig withPrefixCaching(boolean on) {
    return new SchedulerConfig(
        maxNumSeqs, maxNumBatchedTokens, maxWaiting, policy, chunkedPrefill, agingSteps, on);
  }
}
