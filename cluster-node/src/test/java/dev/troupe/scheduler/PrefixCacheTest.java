package dev.troupe.scheduler;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.troupe.scheduler.ScheduleResult.ScheduledChunk;
import java.util.stream.IntStream;
import org.junit.jupiter.api.Test;

/** Automatic prefix caching through the scheduler, with {@link EngineSim} playing the engine. */
class PrefixCacheTest {
  private static final CacheScope BASE = CacheScope.BASE;

  private static int[] prompt(int first, int length) {
    return IntStream.range(0, length).map(i -> first + i).toArray();
  }

  private static int[] concat(int[] a, int... b) {
    int[] out = java.util.Arrays.copyOf(a, a.length + b.length);
    System.arraycopy(b, 0, out, a.length, b.length);
    return out;
  }

  private static Scheduler fcfs(int numBlocks, int blockSize) {
    return new Scheduler(SchedulerConfig.fcfs(8, 64, 10), numBlocks, blockSize);
  }

  /** Runs one request to its end and returns its cached prompt tokens. */
  private static int cachedTokens(EngineSim e, String id, int[] prompt, CacheScope scope) {
    SequenceGroup g = e.add(id, prompt, scope, 1);
    e.run();
    return g.numCachedTokens();
  }

  private static void assertAllFree(Scheduler s) {
    assertEquals(0, s.blocks().numUsed());
    for (int b = 0; b < s.blocks().numBlocks(); b++) assertEquals(0, s.blocks().refCount(b));
    assertFalse(s.hasWork());
  }

  @Test
  void aRepeatedPromptReusesItsFullBlocksAndComputesOnlyTheRest() {
    Scheduler s = fcfs(16, 4);
    EngineSim e = new EngineSim(s);
    int[] p = prompt(1000, 10);
    SequenceGroup a = e.add("a", p, BASE, 2);
    e.run();
    assertEquals(0, a.numCachedTokens());
    SequenceGroup b = e.add("b", p, BASE, 2);
    ScheduledChunk c = e.firstChunkOf("b");
    assertEquals(8, c.start(), "two full blocks of four come from the cache");
    assertArrayEquals(new int[] {1008, 1009}, c.tokens());
    assertEquals(8, b.numCachedTokens());
    assertEquals(20, s.prefixCache().queries());
    assertEquals(8, s.prefixCache().hits());
    e.run();
    assertAllFree(s);
  }

  @Test
  void theLastTokenIsComputedEvenWhenTheWholePromptIsCached() {
    Scheduler s = fcfs(16, 4);
    EngineSim e = new EngineSim(s);
    int[] p = prompt(1000, 8);
    cachedTokens(e, "a", p, BASE);
    e.add("b", p, BASE, 1);
    ScheduledChunk c = e.firstChunkOf("b");
    // vLLM: hits are whole blocks and stop before the last token, whose logits are needed.
    assertEquals(4, c.start());
    assertArrayEquals(new int[] {1004, 1005, 1006, 1007}, c.tokens());
    assertTrue(c.last());
  }

  @Test
  void generatedTokensAreCachedTooSoTheNextTurnHitsThem() {
    Scheduler s = fcfs(16, 4);
    EngineSim e = new EngineSim(s, seq -> 7);
    int[] p = prompt(1000, 8);
    e.add("turn-1", p, BASE, 6); // appends five 7s: positions 0..12 computed
    e.run();
    int[] next = concat(p, 7, 7, 7, 7, 7, 42);
    assertEquals(12, cachedTokens(e, "turn-2", next, BASE), "prompt and answer blocks");
  }

  @Test
  void blocksArePublishedOnlyAfterTheirStepIsComputed() {
    Scheduler s = fcfs(16, 4);
    s.add("a", prompt(1000, 9), 1, 0);
    ScheduleResult first = s.schedule(); // a's prefill, not reported as computed
    s.add("b", prompt(1000, 9), 1, 0);
    ScheduleResult second = s.schedule();
    assertEquals(1, second.chunks().size());
    assertEquals(0, second.chunks().get(0).start(), "a's blocks are not computed yet");
    assertThrows(IllegalArgumentException.class, () -> s.computed(first));
    s.computed(second); // b's blocks; a's step was never reported, so a publishes nothing
    int[] bBlocks = s.get("b").sequences().get(0).blockTable();
    s.add("c", prompt(1000, 9), 1, 0);
    ScheduledChunk c = s.schedule().chunks().get(0);
    assertEquals(8, c.start());
    assertEquals(bBlocks[0], c.blockTable()[0]);
    assertEquals(bBlocks[1], c.blockTable()[1]);
  }

  @Test
  void onlyTheSameSaltShares() {
    int[] p = prompt(1000, 9);
    CacheScope x = new CacheScope(null, "x", true);
    CacheScope y = new CacheScope(null, "y", true);
    EngineSim e = new EngineSim(fcfs(32, 4));
    cachedTokens(e, "x-1", p, x);
    assertEquals(0, cachedTokens(e, "no-salt", p, BASE), "no salt never hits a salted entry");
    assertEquals(0, cachedTokens(e, "y", p, y), "another salt never hits");
    assertEquals(8, cachedTokens(e, "x-2", p, x));

    EngineSim f = new EngineSim(fcfs(32, 4));
    cachedTokens(f, "plain-1", p, BASE);
    assertEquals(0, cachedTokens(f, "salted", p, x), "a salted request never hits unsalted ones");
    assertEquals(8, cachedTokens(f, "plain-2", p, BASE));
  }

  @Test
  void adaptersDoNotShareWithEachOtherOrTheBaseModel() {
    int[] p = prompt(1000, 9);
    CacheScope step1 = new CacheScope("m:step1", null, true);
    CacheScope step2 = new CacheScope("m:step2", null, true);
    EngineSim e = new EngineSim(fcfs(32, 4));
    cachedTokens(e, "s1", p, step1);
    assertEquals(0, cachedTokens(e, "s2", p, step2));
    assertEquals(0, cachedTokens(e, "base", p, BASE));
    assertEquals(8, cachedTokens(e, "s1-again", p, step1));
    assertEquals(8, cachedTokens(e, "base-again", p, BASE));
  }

  @Test
  void underPressureTheLeastRecentlyUsedGoesFirstAndARequestsTailBeforeItsHead() {
    // 5 blocks of 2; each 4-token prompt fills 2 blocks and ends after one token.
    Scheduler s = fcfs(5, 2);
    EngineSim e = new EngineSim(s);
    int[] a = prompt(1000, 4);
    int[] b = prompt(2000, 4);
    int[] c = prompt(3000, 4);
    cachedTokens(e, "a", a, BASE); // candidates: a1 a0 (tail first)
    cachedTokens(e, "b", b, BASE); // a1 a0 b1 b0, one empty block left
    assertEquals(0, s.blocks().numEvictions());
    cachedTokens(e, "c", c, BASE); // the empty block, then evicts a1
    assertEquals(1, s.blocks().numEvictions());
    assertEquals(5, s.prefixCache().numCachedBlocks(), "a0 b1 b0 c1 c0");
    // a's head survived its tail; a' takes a0 and evicts b1, b0 (older than c's blocks).
    assertEquals(2, cachedTokens(e, "a'", concat(a, 1), BASE));
    assertEquals(4, cachedTokens(e, "c'", concat(c, 1), BASE));
    assertEquals(0, cachedTokens(e, "b'", concat(b, 1), BASE));
    assertAllFree(s);
  }

  @Test
  void aPreemptedRequestResumesFromItsCachedBlocks() {
    // As SchedulerTest's preemption case, with distinct prompts: b gives way at position 4.
    Scheduler s = new Scheduler(SchedulerConfig.fcfs(4, 64, 10), 4, 2);
    EngineSim e = new EngineSim(s, seq -> 7);
    e.add("a", prompt(1000, 3), BASE, 3);
    SequenceGroup b = e.add("b", prompt(2000, 3), BASE, 3);
    e.step();
    e.step();
    ScheduleResult r = e.step();
    assertEquals(1, r.preempted().size());
    // b's blocks stayed cached; a's third block evicted b's tail, its head remains.
    ScheduledChunk resumed = e.firstChunkOf("b");
    assertEquals(2, resumed.start());
    assertArrayEquals(new int[] {2002, 7, 7}, resumed.tokens());
    assertEquals(0, b.numCachedTokens(), "settled at the first admission");
    assertEquals(6, s.prefixCache().queries(), "a resumption is not a new query");
    e.run();
    assertAllFree(s);
  }

  @Test
  void resumptionReusesBlocksHoldingGeneratedTokens() {
    SchedulerConfig config = new SchedulerConfig(8, 64, 10, SchedulingPolicy.PRIORITY, true, 0);
    Scheduler s = new Scheduler(config, 6, 2);
    EngineSim e = new EngineSim(s, seq -> 7);
    e.add("low", prompt(1000, 3), 1, 5, BASE, 10);
    e.step();
    e.step();
    e.step(); // low holds 3 blocks: [1000 1001] [1002 7] [7 .]
    e.add("high", prompt(2000, 7), 1, 0, BASE, 1);
    ScheduleResult r = e.step();
    assertEquals("low", r.preempted().get(0).requestId());
    ScheduledChunk resumed = e.firstChunkOf("low");
    assertEquals(4, resumed.start(), "both full blocks, the second with a generated token");
    assertArrayEquals(new int[] {7, 7}, resumed.tokens());
    e.run();
    assertAllFree(s);
  }

  @Test
  void forksShareTheirPromptWithALaterHitAndStillCopyOnWrite() {
    Scheduler s = fcfs(16, 4);
    EngineSim e = new EngineSim(s);
    int[] p = prompt(1000, 6);
    SequenceGroup a = e.add("a", p, 3, 0, BASE, 4);
    e.step(); // prefill, then three choices share blocks 0 and 1
    int shared = a.sequences().get(0).blockTable()[0];
    e.add("b", p, BASE, 2);
    ScheduleResult step = e.step();
    assertEquals(2, step.copies().size(), "two choices copy the shared partial block");
    ScheduledChunk b = null;
    for (ScheduledChunk c : step.chunks()) if (c.sequence().group().requestId().equals("b")) b = c;
    assertEquals(4, b.start());
    assertEquals(shared, b.blockTable()[0]);
    assertEquals(4, s.blocks().refCount(shared), "three choices and b");
    e.run();
    assertAllFree(s);
  }

  @Test
  void requestsThatDoNotReadTheCacheStillFillIt() {
    Scheduler s = fcfs(32, 4);
    EngineSim e = new EngineSim(s);
    int[] p = prompt(1000, 9);
    CacheScope noRead = new CacheScope(null, null, false); // prompt_logprobs
    assertEquals(0, cachedTokens(e, "logprobs-1", p, noRead));
    assertEquals(8, cachedTokens(e, "plain", p, BASE));
    e.add("logprobs-2", p, noRead, 1);
    assertEquals(0, e.firstChunkOf("logprobs-2").start(), "computes every prompt position");
    assertEquals(9, s.prefixCache().queries(), "only the reading request was a query");
    e.run();
    assertAllFree(s);
  }

  @Test
  void turnedOffNothingIsCachedOrCounted() {
    SchedulerConfig off = SchedulerConfig.fcfs(8, 64, 10).withPrefixCaching(false);
    Scheduler s = new Scheduler(off, 16, 4);
    EngineSim e = new EngineSim(s);
    int[] p = prompt(1000, 9);
    cachedTokens(e, "a", p, BASE);
    e.add("b", p, BASE, 1);
    assertEquals(0, e.firstChunkOf("b").start());
    assertEquals(0, s.prefixCache().numCachedBlocks());
    assertEquals(0, s.prefixCache().queries());
    assertFalse(s.prefixCache().enabled());
  }

  @Test
  void aRequestHitsBlocksOfAPromptStillBeingPrefilledInChunks() {
    Scheduler s = new Scheduler(SchedulerConfig.fcfs(8, 8, 10), 16, 4);
    EngineSim e = new EngineSim(s);
    int[] p = prompt(1000, 12);
    e.add("a", p, BASE, 1);
    assertEquals(8, e.step().numTokens()); // a's first chunk: blocks 0 and 1
    e.add("b", p, BASE, 1);
    ScheduleResult r = e.step();
    assertEquals(2, r.chunks().size(), "a's last chunk and b's remainder share the budget");
    ScheduledChunk b = r.chunks().get(1);
    assertEquals(8, b.start());
    assertEquals(4, b.tokens().length);
    e.run();
    assertAllFree(s);
  }

  @Test
  void priorityPreemptionCountsCachedBlocksTheWaitingRequestWouldShare() {
    SchedulerConfig config = new SchedulerConfig(8, 64, 10, SchedulingPolicy.PRIORITY, true, 0);
    Scheduler s = new Scheduler(config, 6, 2);
    EngineSim e = new EngineSim(s);
    int[] p = prompt(1000, 8);
    e.add("low", p, 1, 5, BASE, 50);
    e.step(); // 4 full blocks
    e.step(); // position 8: a fifth block; one block is free
    e.add("high", concat(p, 99), 1, 0, BASE, 1);
    ScheduleResult r = e.step();
    assertTrue(r.preempted().isEmpty(), "high needs one block beyond the four low holds");
    ScheduledChunk high = null;
    for (ScheduledChunk c : r.chunks())
      if (c.sequence().group().requestId().equals("high")) high = c;
    assertEquals(8, high.start());
    e.run();
    assertAllFree(s);
  }

  @Test
  void resetForgetsTheCacheOnlyWhenNothingIsHeld() {
    Scheduler s = fcfs(16, 4);
    EngineSim e = new EngineSim(s);
    int[] p = prompt(1000, 9);
    cachedTokens(e, "a", p, BASE);
    e.add("running", prompt(5000, 9), BASE, 10);
    e.step();
    assertFalse(s.prefixCache().reset(), "a request holds blocks");
    e.run();
    assertTrue(s.prefixCache().reset());
    assertEquals(0, s.prefixCache().numCachedBlocks());
    assertEquals(0, cachedTokens(e, "b", p, BASE));
  }
}
