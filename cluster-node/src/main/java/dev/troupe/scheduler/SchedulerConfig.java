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
 */
public record SchedulerConfig(
    int maxNumSeqs,
    int maxNumBatchedTokens,
    int maxWaiting,
    SchedulingPolicy policy,
    boolean chunkedPrefill,
    int agingSteps) {

  public SchedulerConfig {
    if (maxNumSeqs < 1) throw new IllegalArgumentException("maxNumSeqs must be >= 1");
    if (maxNumBatchedTokens < 1)
      throw new IllegalArgumentException("maxNumBatchedTokens must be >= 1");
    if (maxWaiting < 0) throw new IllegalArgumentException("maxWaiting must be >= 0");
    if (policy == null) throw new IllegalArgumentException("policy is required");
    if (agingSteps < 0) throw new IllegalArgumentException("agingSteps must be >= 0");
  }

  /** FCFS with chunked prefill, as vLLM v1 runs by default. */
  public static SchedulerConfig fcfs(int maxNumSeqs, int maxNumBatchedTokens, int maxWaiting) {
    return new SchedulerConfig(
        maxNumSeqs, maxNumBatchedTokens, maxWaiting, SchedulingPolicy.FCFS, true, 0);
  }
}
