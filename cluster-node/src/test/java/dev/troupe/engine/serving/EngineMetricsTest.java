package dev.troupe.engine.serving;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.troupe.engine.core.EngineSettings;
import dev.troupe.engine.core.LatencyStats;
import dev.troupe.protocol.cluster.GenerationRequest;
import dev.troupe.scheduler.SchedulingPolicy;
import org.junit.jupiter.api.Test;

/**
 * The engine's counters behind {@code /metrics}: vLLM's latency histograms (one queue, prefill,
 * decode and inference observation per request, one inter-token gap per later step with tokens) and
 * the prefix cache's queries and hits in prompt tokens.
 */
class EngineMetricsTest {

  @Test
  void latenciesAndPrefixCacheCountsFollowTheRequests() {
    try (Driver e = EngineTest.engine(EngineSettings.small(), SchedulingPolicy.FCFS)) {
      String text =
          "The same prompt, long enough to fill a couple of sixteen-token blocks at least.";
      int prompt = EngineTest.encode(text).length;
      for (int i = 0; i < 3; i++)
        assertNull(e.add(GenerationRequest.prompt("r" + i, text, EngineTest.greedy(5))));
      e.drain();
      LatencyStats l = e.engine.core().latencies();
      assertEquals(3, l.queue().count());
      assertEquals(3, l.prefill().count());
      assertEquals(3, l.decode().count());
      assertEquals(3, l.inference().count());
      assertEquals(3 * 4, l.interToken().count(), "5 tokens in 5 steps: 4 gaps each");
      assertTrue(l.inference().sum() >= l.decode().sum());
      assertEquals(
          l.inference().sum(), l.prefill().sum() + l.decode().sum(), 1e-6, "inference = both");
      // All three were admitted in the same step: nothing was published yet, no hits.
      var cache = e.engine.core().scheduler().prefixCache();
      assertEquals(3L * prompt, cache.queries());
      assertEquals(0, cache.hits());
      assertNull(e.add(GenerationRequest.prompt("r3", text, EngineTest.greedy(2))));
      e.drain();
      assertEquals(4L * prompt, cache.queries());
      assertEquals((prompt - 1) / 16 * 16, cache.hits());
    }
  }
}
