package dev.troupe.engine.model;

import java.nio.ByteBuffer;
import java.nio.FloatBuffer;
import java.nio.ShortBuffer;
import java.util.Locale;
import java.util.SortedSet;
import java.util.concurrent.atomic.AtomicLong;
import java.util.function.Consumer;
import java.util.function.LongSupplier;

/**
 * Weights that report how far their reading has got, as vLLM's weight-loading bar does: every
 * {@code interval} while a load goes on, one line with the bytes read of the whole and the seconds
 * since the start, and one when {@link #done()} is called. A load shorter than {@code interval}
 * reports only its end. Bytes are counted as stored ({@link TensorInfo#dtype()}), whatever dtype a
 * copy converts them to. Thread-safe, as the source it wraps.
 */
public final class LoadProgress implements WeightSource {
  private final WeightSource weights;
  private final String what;
  private final Consumer<String> report;
  private final LongSupplier nanos;
  private final long intervalNanos;
  private final long total;
  private final long start;
  private final AtomicLong read = new AtomicLong();
  private final AtomicLong nextReport;

  /**
   * @param what the model, for the lines ("model qwen")
   * @param report where each line goes (a logger at INFO)
   * @param nanos the clock, {@link System#nanoTime} outside tests
   * @param intervalNanos the time between two lines
   */
  public LoadProgress(
      WeightSource weights,
      String what,
      Consumer<String> report,
      LongSupplier nanos,
      long intervalNanos) {
    this.weights = weights;
    this.what = what;
    this.report = report;
    this.nanos = nanos;
    this.intervalNanos = intervalNanos;
    long bytes = 0;
    for (String name : weights.names()) {
      TensorInfo t = weights.info(name);
      bytes += t.numel() * t.dtype().bytes();
    }
    this.total = bytes;
    this.start = nanos.getAsLong();
    this.nextReport = new AtomicLong(start + intervalNanos);
  }

  /** Reports the end of the load: the bytes read and the time it took. */
  public void done() {
    report.accept(
        String.format(
            Locale.ROOT,
            "%s: weights loaded, %s in %.1f s",
            what,
            size(read.get()),
            (nanos.getAsLong() - start) / 1e9));
  }

  private void count(String name, int count) {
    long bytes = read.addAndGet((long) count * weights.info(name).dtype().bytes());
    long now = nanos.getAsLong();
    long due = nextReport.get();
    // One reporter per interval, whichever thread gets there first.
    if (now >= due && nextReport.compareAndSet(due, now + intervalNanos))
      report.accept(
          String.format(
              Locale.ROOT,
              "%s: loading weights, %s of %s (%d%%), %.0f s",
              what,
              size(bytes),
              size(total),
              total == 0 ? 100 : Math.min(100, bytes * 100 / total),
              (now - start) / 1e9));
  }

  private static String size(long bytes) {
    if (bytes >= 1L << 30)
      return String.format(Locale.ROOT, "%.2f GiB", bytes / (double) (1L << 30));
    return String.format(Locale.ROOT, "%.1f MiB", bytes / (double) (1L << 20));
  }

  @Override
  public SortedSet<String> names() {
    return weights.names();
  }

  @Override
  public TensorInfo info(String name) {
    return weights.info(name);
  }

  @Override
  public void copyTo(String name, long offset, int count, FloatBuffer dst) {
    weights.copyTo(name, offset, count, dst);
    count(name, count);
  }

  @Override
  public void copyTo(String name, long offset, int count, ShortBuffer dst, DType as) {
    weights.copyTo(name, offset, count, dst, as);
    count(name, count);
  }

  @Override
  public void copyStored(String name, long offset, int count, ByteBuffer dst) {
    weights.copyStored(name, offset, count, dst);
    count(name, count);
  }

  @Override
  public String origin() {
    return weights.origin();
  }

  @Override
  public void close() {
    weights.close();
  }
}
