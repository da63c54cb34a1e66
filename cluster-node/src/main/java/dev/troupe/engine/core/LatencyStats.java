package dev.troupe.engine.core;

import java.util.Arrays;

/**
 * The per-request latencies vLLM's engine reports (v1 {@code metrics/loggers.py}), as histograms
 * with its bucket bounds, measured on the engine's own clock: queue time (arrival in the core to
 * first scheduled), prefill time (first scheduled to first token), decode time (first to last
 * token), inference time (first scheduled to last token), and inter-token latency (between two
 * steps that gave a request tokens; one observation per request per such step). A request is
 * counted when it leaves the core, finished or aborted, if it produced a token.
 *
 * <p>Thread: its engine core's.
 */
public final class LatencyStats {
  /** vLLM's {@code request_latency_buckets}, seconds. */
  public static final double[] REQUEST_BOUNDS = {
    0.3, 0.5, 0.8, 1.0, 1.5, 2.0, 2.5, 5.0, 10.0, 15.0, 20.0, 30.0, 40.0, 50.0, 60.0, 120.0, 240.0,
    480.0, 960.0, 1920.0, 7680.0
  };

  /** vLLM's inter-token latency buckets, seconds. */
  public static final double[] INTER_TOKEN_BOUNDS = {
    0.01, 0.025, 0.05, 0.075, 0.1, 0.15, 0.2, 0.3, 0.4, 0.5, 0.75, 1.0, 2.5, 5.0, 7.5, 10.0, 20.0,
    40.0, 80.0
  };

  private final Histogram queue = new Histogram(REQUEST_BOUNDS);
  private final Histogram prefill = new Histogram(REQUEST_BOUNDS);
  private final Histogram decode = new Histogram(REQUEST_BOUNDS);
  private final Histogram inference = new Histogram(REQUEST_BOUNDS);
  private final Histogram interToken = new Histogram(INTER_TOKEN_BOUNDS);

  void admitted(CoreRequest r, long now) {
    r.queuedAt = now;
  }

  /** A chunk of the request is in this step (the first one ends its queue time). */
  void scheduled(CoreRequest r, long now) {
    if (r.scheduledAt == 0) r.scheduledAt = now;
  }

  /** The step that ended at {@code now} gave the request tokens. */
  void produced(CoreRequest r, long now) {
    if (r.firstTokenAt == 0) {
      r.firstTokenAt = now;
      queue.observe(r.scheduledAt - r.queuedAt);
      prefill.observe(now - r.scheduledAt);
    } else {
      interToken.observe(now - r.lastTokenAt);
    }
    r.lastTokenAt = now;
  }

  /** The request left the core (finished, aborted or failed). */
  void left(CoreRequest r) {
    if (r.firstTokenAt == 0 || r.counted) return;
    r.counted = true;
    decode.observe(r.lastTokenAt - r.firstTokenAt);
    inference.observe(r.lastTokenAt - r.scheduledAt);
  }

  public Snapshot queue() {
    return queue.snapshot();
  }

  public Snapshot prefill() {
    return prefill.snapshot();
  }

  public Snapshot decode() {
    return decode.snapshot();
  }

  public Snapshot inference() {
    return inference.snapshot();
  }

  public Snapshot interToken() {
    return interToken.snapshot();
  }

  /**
   * A histogram's state.
   *
   * @param bounds upper bounds of the buckets, seconds (the last bucket, +Inf, has none)
   * @param counts observations per bucket (not cumulative), {@code bounds.length + 1} of them
   * @param sum the observations' sum, seconds
   */
  public record Snapshot(double[] bounds, long[] counts, double sum) {
    public long count() {
      long n = 0;
      for (long c : counts) n += c;
      return n;
    }
  }

  private static final class Histogram {
    private final double[] bounds;
    private final long[] counts;
    private double sum;

    Histogram(double[] bounds) {
      this.bounds = bounds;
      this.counts = new long[bounds.length + 1];
    }

    void observe(long nanos) {
      double seconds = Math.max(0, nanos) / 1e9;
      int i = Arrays.binarySearch(bounds, seconds);
      counts[i >= 0 ? i : -i - 1]++; // le semantics: a value equal to a bound is in its bucket
      sum += seconds;
    }

    Snapshot snapshot() {
      return new Snapshot(bounds.clone(), counts.clone(), sum);
    }
  }
}
