package dev.troupe.engine.model;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;

import java.nio.FloatBuffer;
import java.nio.ShortBuffer;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.atomic.AtomicLong;
import org.junit.jupiter.api.Test;

/** The weight-loading progress lines, on a clock the test moves. */
class LoadProgressTest {
  private static final long SECOND = 1_000_000_000L;

  /** Two FP32 tensors of 1 MiB each (2^18 floats). */
  private static InMemoryWeights twoMiB() {
    return new InMemoryWeights(
        Map.of(
            "a", new InMemoryWeights.Tensor(new float[1 << 18], new long[] {1 << 18}),
            "b", new InMemoryWeights.Tensor(new float[1 << 18], new long[] {512, 512})),
        "test");
  }

  @Test
  void reportsBytesOfTheWholeAndSecondsEveryIntervalThenTheEnd() {
    List<String> lines = new ArrayList<>();
    AtomicLong clock = new AtomicLong(100 * SECOND);
    LoadProgress w = new LoadProgress(twoMiB(), "model m", lines::add, clock::get, 5 * SECOND);
    float[] half = new float[1 << 17];
    clock.addAndGet(2 * SECOND);
    w.copyTo("a", 0, half.length, FloatBuffer.wrap(half)); // 0.5 MiB at 2 s: not due yet
    assertEquals(List.of(), lines);
    clock.addAndGet(4 * SECOND);
    w.copyTo("a", half.length, half.length, FloatBuffer.wrap(half)); // 1 MiB at 6 s
    assertEquals(List.of("model m: loading weights, 1.0 MiB of 2.0 MiB (50%), 6 s"), lines);
    clock.addAndGet(SECOND);
    w.copyTo("b", 0, half.length, ShortBuffer.wrap(new short[half.length]), DType.BF16);
    assertEquals(1, lines.size(), "the next line is due 5 s after the last");
    clock.addAndGet(5 * SECOND);
    w.copyTo("b", half.length, half.length, FloatBuffer.wrap(half)); // all of it at 12 s
    clock.addAndGet(500_000_000L);
    w.done();
    assertEquals(
        List.of(
            "model m: loading weights, 1.0 MiB of 2.0 MiB (50%), 6 s",
            "model m: loading weights, 2.0 MiB of 2.0 MiB (100%), 12 s",
            "model m: weights loaded, 2.0 MiB in 12.5 s"),
        lines);
  }

  @Test
  void aShortLoadReportsOnlyItsEndAndCopiesAsTheSourceDoes() {
    List<String> lines = new ArrayList<>();
    AtomicLong clock = new AtomicLong();
    InMemoryWeights source = twoMiB();
    LoadProgress w = new LoadProgress(source, "model m", lines::add, clock::get, 5 * SECOND);
    assertArrayEquals(source.floats("a"), w.floats("a"));
    assertEquals(source.info("b"), w.info("b"));
    assertEquals(source.names(), w.names());
    w.done();
    assertEquals(List.of("model m: weights loaded, 1.0 MiB in 0.0 s"), lines);
  }
}
