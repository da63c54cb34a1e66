package dev.troupe.worker;

/**
 * A replica's prompt and generated tokens per second over the last minute, from its engine's
 * running totals (the counters behind {@code vllm:prompt_tokens_total} and {@code
 * vllm:generation_tokens_total}, so the rates agree with a one-minute {@code rate()} of them). Each
 * reading adds the tokens since the previous one to the current second's slot of a 60-slot ring;
 * the rate is the ring's sum over the minute, or over the replica's life while it is younger.
 *
 * <p>Thread: its worker's. Times are {@code System.nanoTime()} values passed in.
 */
final class TokenRates {
  static final int WINDOW_SECONDS = 60;

  private final long startNanos;
  private final long[] prompt = new long[WINDOW_SECONDS];
  private final long[] generated = new long[WINDOW_SECONDS];

  /** The second (since start) each slot holds; -1 when empty. */
  private final long[] second = new long[WINDOW_SECONDS];

  private long lastPrompt;
  private long lastGenerated;

  TokenRates(long startNanos) {
    this.startNanos = startNanos;
    java.util.Arrays.fill(second, -1);
  }

  /** The engine's totals now. */
  void record(long nowNanos, long promptTotal, long generatedTotal) {
    long s = secondOf(nowNanos);
    int slot = (int) (s % WINDOW_SECONDS);
    if (second[slot] != s) {
      second[slot] = s;
      prompt[slot] = 0;
      generated[slot] = 0;
    }
    prompt[slot] += Math.max(0, promptTotal - lastPrompt);
    generated[slot] += Math.max(0, generatedTotal - lastGenerated);
    lastPrompt = promptTotal;
    lastGenerated = generatedTotal;
  }

  /** Prompt tokens per second over the last minute, as of {@code nowNanos}. */
  double promptPerSecond(long nowNanos) {
    return perSecond(prompt, nowNanos);
  }

  /** Generated tokens per second over the last minute, as of {@code nowNanos}. */
  double generatedPerSecond(long nowNanos) {
    return perSecond(generated, nowNanos);
  }

  private double perSecond(long[] counts, long nowNanos) {
    long now = secondOf(nowNanos);
    long sum = 0;
    for (int i = 0; i < WINDOW_SECONDS; i++)
      if (second[i] >= 0 && now - second[i] < WINDOW_SECONDS) sum += counts[i];
    double span = Math.min(WINDOW_SECONDS, Math.max(1e-9, (nowNanos - startNanos) / 1e9));
    return sum / Math.max(1.0, span);
  }

  private long secondOf(long nanos) {
    return Math.max(0, nanos - startNanos) / 1_000_000_000L;
  }
}
