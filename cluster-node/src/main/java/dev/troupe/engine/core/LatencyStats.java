package dev.troupe.engine.core;

import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;

/**
 * The per-request latencies vLLM's engine reports (v1 {@code metrics/loggers.py}), as histograms
 * with its bucket bounds, measured on the engine's own clock: queue time (arrival in the core to
 * first scheduled), prefill time (first scheduled to first token), decode time (first to last
 * token), inference time (first scheduled to last token), and inter-token latency (between two
 * steps that gave a request tokens; one observation per request per such step). A request is
 * counted when it leaves the core, finished or aborted, if it produced a token.
 *
 * <p>Beside them, vLLM's token histograms of such a request — prompt tokens, tokens generated per
 * choice (vLLM v1 runs each of n choices as a request of its own), the most any choice generated,
 * the {@code n} and {@code max_tokens} parameters, its mean time per output token (decode time over
 * the tokens after the first) — and the tokens each engine step computed.
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

  /** vLLM's {@code iteration_tokens_total} buckets: tokens computed in one engine step. */
  public static final double[] ITERATION_TOKEN_BOUNDS = {
    1, 8, 16, 32, 64, 128, 256, 512, 1024, 2048, 4096, 8192, 16384
  };

  /** vLLM's {@code request_params_n} buckets. */
  public static final double[] N_BOUNDS = {1, 2, 5, 10, 20};

  private final Histogram queue = new Histogram(REQUEST_BOUNDS);
  private final Histogram prefill = new Histogram(REQUEST_BOUNDS);
  private final Histogram decode = new Histogram(REQUEST_BOUNDS);
  private final Histogram inference = new Histogram(REQUEST_BOUNDS);
  private final Histogram interToken = new Histogram(INTER_TOKEN_BOUNDS);
  private final Histogram timePerOutputToken = new Histogram(INTER_TOKEN_BOUNDS);
  private final Histogram promptTokens;
  private final Histogram generationTokens;
  private final Histogram maxGenerationTokens;
  private final Histogram paramsN = new Histogram(N_BOUNDS);
  private final Histogram paramsMaxTokens;
  private final Histogram iterationTokens = new Histogram(ITERATION_TOKEN_BOUNDS);

  /** The step being scheduled ({@link #scheduled}): its start and the tokens of its chunks. */
  private long stepAt;

  private long stepTokens;

  /**
   * @param maxModelLen the context length: token-count buckets are vLLM's 1-2-5 series up to it
   */
  public LatencyStats(int maxModelLen) {
    double[] tokenBounds = oneTwoFive(maxModelLen);
    this.promptTokens = new Histogram(tokenBounds);
    this.generationTokens = new Histogram(tokenBounds);
    this.maxGenerationTokens = new Histogram(tokenBounds);
    this.paramsMaxTokens = new Histogram(tokenBounds);
  }

  /** vLLM's {@code build_1_2_5_buckets(max)}: 1, 2, 5, 10, 20, 50, ... while ≤ {@code max}. */
  public static double[] oneTwoFive(long max) {
    List<Double> bounds = new ArrayList<>();
    for (long scale = 1; scale <= max && scale > 0; scale *= 10)
      for (long m : new long[] {1, 2, 5}) if (m * scale <= max) bounds.add((double) (m * scale));
    return bounds.stream().mapToDouble(Double::doubleValue).toArray();
  }

  void admitted(CoreRequest r, long now) {
    r.queuedAt = now;
  }

  /**
   * A chunk of {@code tokens} tokens of the request is in the step that started at {@code now} (the
   * request's first one ends its queue time).
   */
  void scheduled(CoreRequest r, long now, int tokens) {
    if (r.scheduledAt == 0) r.scheduledAt = now;
    if (now != stepAt) stepDone(); // a step whose pass failed never reached timed()
    stepAt = now;
    stepTokens += tokens;
  }

  /** The step scheduled last is over: its tokens are one observation. */
  void stepDone() {
    if (stepTokens > 0) iterationTokens.observeValue(stepTokens);
    stepTokens = 0;
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
    promptTokens.observeValue(r.prompt().length);
    int most = 0;
    for (CoreRequest.Choice c : r.choices) {
      if (c.sequence == null) continue; // beam search, or a choice not yet forked
      int generated = c.sequence.numOutputTokens();
      generationTokens.observeValue(generated);
      most = Math.max(most, generated);
    }
    if (r.beam == null) maxGenerationTokens.observeValue(most);
    paramsN.observeValue(r.params().n());
    if (r.params().maxTokens() != null) paramsMaxTokens.observeValue(r.params().maxTokens());
    if (most > 1) timePerOutputToken.observe((r.lastTokenAt - r.firstTokenAt) / (most - 1));
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

  /** A request's decode time over its tokens after the first, seconds. */
  public Snapshot timePerOutputToken() {
    return timePerOutputToken.snapshot();
  }

  /** Prompt tokens per request. */
  public Snapshot promptTokens() {
    return promptTokens.snapshot();
  }

  /** Tokens generated per choice. */
  public Snapshot generationTokens() {
    return generationTokens.snapshot();
  }

  /** The most tokens any choice of a request generated. */
  public Snapshot maxGenerationTokens() {
    return maxGenerationTokens.snapshot();
  }

  /** The {@code n} parameter per request. */
  public Snapshot paramsN() {
    return paramsN.snapshot();
  }

  /** The {@code max_tokens} parameter per request that set it. */
  public Snapshot paramsMaxTokens() {
    return paramsMaxTokens.snapshot();
  }

  /** Tokens (prompt chunks and decoded tokens) computed per engine step. */
  public Snapshot iterationTokens() {
    return iterationTokens.snapshot();
  }

  /**
   * A histogram's state.
   *
   * @param bounds upper bounds of the buckets, seconds or tokens (the last bucket, +Inf, has none)
   * @param counts observations per bucket (not cumulative), {@code bounds.length + 1} of them
   * @param sum the observations' sum
   */
  public record Snapshot(double[] bounds, long[] counts, double sum) {
    public long count() {
      long n = 0;
      for (long c : counts) n += c;
      return n;
    }
  }

  /** One histogram, not thread-safe (its owner's thread only). */
  public static final class Histogram {
    private final double[] bounds;
    private final long[] counts;
    private double sum;

    public Histogram(double[] bounds) {
      this.bounds = bounds;
      this.counts = new long[bounds.length + 1];
    }

    /** A duration, observed in seconds. */
    public void observe(long nanos) {
      observeValue(Math.max(0, nanos) / 1e9);
    }

    void observeValue(double value) {
      int i = Arrays.binarySearch(bounds, value);
      counts[i >= 0 ? i : -i - 1]++; // le semantics: a value equal to a bound is in its bucket
      sum += value;
    }

    public Snapshot snapshot() {
      return new Snapshot(bounds.clone(), counts.clone(), sum);
    }
  }
}
