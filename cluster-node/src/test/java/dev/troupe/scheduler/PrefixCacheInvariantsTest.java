package dev.troupe.scheduler;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.ArrayList;
import java.util.List;
import java.util.Random;
import java.util.stream.IntStream;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.CsvSource;

/**
 * A mixed, seeded workload under cache pressure: shared system prompts, salts, adapters, n up to 3,
 * requests that skip the cache, aborts, preemption, both policies. {@link EngineSim} checks at
 * every step that each chunk sees exactly its own tokens and never writes into a shared or cached
 * block; at the end every block must be free again.
 */
class PrefixCacheInvariantsTest {

  @ParameterizedTest
  @CsvSource({"1,fcfs", "2,fcfs", "3,priority", "4,priority"})
  void mixedWorkloadKeepsEveryChunkCorrectAndLeaksNoBlock(long seed, String policy) {
    SchedulingPolicy p = SchedulingPolicy.parse(policy);
    SchedulerConfig config =
        new SchedulerConfig(6, 16, 8, p, true, p == SchedulingPolicy.PRIORITY ? 4 : 0);
    Scheduler s = new Scheduler(config, 24, 4);
    Random rnd = new Random(seed);
    EngineSim e =
        new EngineSim(
            s,
            seq ->
                Math.floorMod(
                    seq.group().requestId().hashCode() * 31 + seq.index() * 7 + seq.numTokens(),
                    50));
    List<int[]> systems = new ArrayList<>();
    for (int i = 0; i < 3; i++) {
      int base = 100 * (i + 1);
      systems.add(IntStream.range(0, 8 + i * 3).map(k -> base + k).toArray());
    }
    String[] salts = {null, null, "s1"};
    String[] adapters = {null, null, "m:step1"};
    List<String> ids = new ArrayList<>();
    int next = 0;
    for (int stepNo = 0; stepNo < 5000 && (next < 150 || s.hasWork()); stepNo++) {
      int arrivals = next < 150 ? rnd.nextInt(3) : 0;
      for (int k = 0; k < arrivals && s.hasRoom(); k++) {
        int[] system = systems.get(rnd.nextInt(systems.size()));
        int tail = 1 + rnd.nextInt(10);
        int[] prompt = java.util.Arrays.copyOf(system, system.length + tail);
        for (int t = system.length; t < prompt.length; t++) prompt[t] = 1000 + rnd.nextInt(5);
        CacheScope scope =
            new CacheScope(adapters[rnd.nextInt(3)], salts[rnd.nextInt(3)], rnd.nextInt(10) != 0);
        int priority = p == SchedulingPolicy.PRIORITY ? rnd.nextInt(4) : 0;
        String id = "r" + next++;
        e.add(id, prompt, 1 + rnd.nextInt(3), priority, scope, 1 + rnd.nextInt(8));
        ids.add(id);
      }
      if (!ids.isEmpty() && rnd.nextInt(30) == 0) s.abort(ids.get(rnd.nextInt(ids.size())));
      e.step();
    }
    assertEquals(150, next);
    assertTrue(!s.hasWork());
    assertEquals(0, s.blocks().numUsed());
    for (int b = 0; b < s.blocks().numBlocks(); b++) assertEquals(0, s.blocks().refCount(b));
    assertEquals(s.blocks().numBlocks(), s.blocks().numFree());
    assertTrue(s.prefixCache().hits() > 0, "the shared system prompts were hit");
    assertTrue(s.blocks().numEvictions() > 0, "the cache was under pressure");
    assertTrue(s.numPreemptions() > 0, "requests were preempted and resumed");
  }
}
