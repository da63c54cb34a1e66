package dev.troupe.scheduler;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.troupe.scheduler.ScheduleResult.ScheduledChunk;
import java.util.ArrayList;
import java.util.List;
import java.util.stream.IntStream;
import org.junit.jupiter.api.Test;

class SchedulerTest {

  private static int[] prompt(int length) {
    return IntStream.range(0, length).map(i -> 1000 + i).toArray();
  }

  /** Plays the engine: every sequence that caught up gets token 7 appended. */
  private static ScheduleResult step(Scheduler s) {
    ScheduleResult r = s.schedule();
    for (ScheduledChunk c : r.chunks()) if (c.last()) c.sequence().append(7);
    return r;
  }

  private static List<String> ids(ScheduleResult r) {
    List<String> ids = new ArrayList<>();
    for (ScheduledChunk c : r.chunks()) ids.add(c.sequence().group().requestId());
    return ids;
  }

  @Test
  void chunkedPrefillSplitsALongPromptUnderTheTokenBudget() {
    Scheduler s = new Scheduler(SchedulerConfig.fcfs(4, 4, 10), 16, 4);
    s.add("a", prompt(10), 1, 0);
    ScheduleResult r1 = step(s);
    assertEquals(1, r1.chunks().size());
    assertEquals(0, r1.chunks().get(0).start());
    assertEquals(4, r1.chunks().get(0).tokens().length);
    assertFalse(r1.chunks().get(0).last());
    ScheduleResult r2 = step(s);
    assertEquals(4, r2.chunks().get(0).start());
    ScheduleResult r3 = step(s);
    ScheduledChunk last = r3.chunks().get(0);
    assertEquals(8, last.start());
    assertArrayEquals(new int[] {1008, 1009}, last.tokens());
    assertTrue(last.last());
    assertEquals(3, last.blockTable().length, "10 positions need 3 blocks of 4");
    // Next step decodes the appended token at position 10.
    ScheduledChunk decode = step(s).chunks().get(0);
    assertEquals(10, decode.start());
    assertArrayEquals(new int[] {7}, decode.tokens());
  }

  /**
   * Issue 21: a request that needs every prompt position's logits (prompt logprobs) gets its own
   * chunk bound, under a budget that would take its whole prompt at once; another request shares
   * the same steps.
   */
  @Test
  void aGroupsChunkLimitSplitsItsPromptUnderALargeBudget() {
    Scheduler s = new Scheduler(SchedulerConfig.fcfs(4, 256, 10), 64, 4);
    s.add("a", prompt(35), 1, 0).limitChunks(10);
    s.add("b", prompt(20), 1, 0);
    ScheduleResult r1 = step(s);
    assertEquals(List.of("a", "b"), ids(r1));
    assertEquals(10, r1.chunks().get(0).tokens().length);
    assertEquals(20, r1.chunks().get(1).tokens().length, "b is not limited");
    List<Integer> sizes = new ArrayList<>(List.of(10));
    for (int i = 0; i < 3; i++) sizes.add(step(s).chunks().get(0).tokens().length);
    assertEquals(List.of(10, 10, 10, 5), sizes);
    assertArrayEquals(new int[] {7}, step(s).chunks().get(0).tokens(), "then it decodes");
    // without chunked prefill the group still runs in its own chunks
    SchedulerConfig whole = new SchedulerConfig(4, 256, 10, SchedulingPolicy.FCFS, false, 0);
    Scheduler t = new Scheduler(whole, 64, 4);
    t.add("c", prompt(25), 1, 0).limitChunks(10);
    assertEquals(10, step(t).chunks().get(0).tokens().length);
  }

  @Test
  void withoutChunkingAPromptWaitsForAWholeBudget() {
    SchedulerConfig config = new SchedulerConfig(4, 8, 10, SchedulingPolicy.FCFS, false, 0);
    Scheduler s = new Scheduler(config, 32, 4);
    s.add("a", prompt(5), 1, 0);
    s.add("b", prompt(6), 1, 0);
    ScheduleResult r1 = step(s);
    assertEquals(List.of("a"), ids(r1), "b's 6 tokens do not fit the 3 left");
    ScheduleResult r2 = step(s);
    assertEquals(List.of("a", "b"), ids(r2), "decode of a (1) + whole prompt of b (6)");
  }

  @Test
  void requestsJoinAndLeaveBetweenSteps() {
    Scheduler s = new Scheduler(SchedulerConfig.fcfs(2, 64, 10), 32, 4);
    s.add("a", prompt(3), 1, 0);
    s.add("b", prompt(3), 1, 0);
    s.add("c", prompt(3), 1, 0);
    assertEquals(List.of("a", "b"), ids(step(s)), "max two running sequences");
    assertEquals(1, s.numWaiting());
    assertEquals(List.of("a", "b"), ids(step(s)));
    s.finish(s.get("a").sequences().get(0));
    assertNull(s.get("a"));
    ScheduleResult r = step(s);
    assertEquals(List.of("b", "c"), ids(r), "c joins as soon as a leaves");
    assertEquals(0, s.numWaiting());
    assertEquals(2, s.numRunning());
  }

  @Test
  void choicesShareThePromptAndCopyThePartialBlockOnWrite() {
    Scheduler s = new Scheduler(SchedulerConfig.fcfs(8, 64, 10), 8, 4);
    SequenceGroup g = s.add("a", prompt(6), 3, 0);
    ScheduleResult prefill = s.schedule();
    assertEquals(2, s.blocks().numUsed());
    Sequence first = g.sequences().get(0);
    Sequence second = s.fork(first, 1);
    Sequence third = s.fork(first, 2);
    int[] table = first.blockTable();
    assertEquals(3, s.blocks().refCount(table[0]));
    assertEquals(3, s.blocks().refCount(table[1]));
    assertEquals(2, s.blocks().numUsed(), "forks share, no new blocks");
    first.append(1);
    second.append(2);
    third.append(3);
    ScheduleResult decode = s.schedule();
    assertEquals(3, decode.chunks().size());
    // Position 6 is in the shared partial block 1: two sequences copy it, the last writes in place.
    assertEquals(2, decode.copies().size());
    for (var copy : decode.copies()) assertEquals(table[1], copy.src());
    assertEquals(4, s.blocks().numUsed());
    assertEquals(3, s.blocks().refCount(table[0]), "the full prompt block stays shared");
    assertEquals(1, s.blocks().refCount(table[1]));
    List<Integer> lastBlocks = new ArrayList<>();
    for (ScheduledChunk c : decode.chunks()) {
      assertEquals(table[0], c.blockTable()[0]);
      lastBlocks.add(c.blockTable()[1]);
    }
    assertEquals(3, lastBlocks.stream().distinct().count(), "each choice writes its own block");
    assertFalse(prefill.isEmpty());
    // Finishing releases only what is no longer shared.
    s.finish(first);
    s.finish(second);
    assertEquals(2, s.blocks().numUsed());
    s.finish(third);
    assertEquals(0, s.blocks().numUsed());
    assertFalse(s.hasWork());
  }

  @Test
  void theLatestArrivalIsPreemptedAndRecomputedWhenBlocksRunOut() {
    // 4 blocks of 2: a and b take 2 blocks each after their prompts (3 tokens).
    Scheduler s = new Scheduler(SchedulerConfig.fcfs(4, 64, 10), 4, 2);
    s.add("a", prompt(3), 1, 0);
    s.add("b", prompt(3), 1, 0);
    step(s); // prefill both: positions 0..2 (2 blocks each)
    assertEquals(4, s.blocks().numUsed());
    step(s); // decode position 3: still in block 1 of each
    ScheduleResult r = step(s); // position 4 needs a third block for each: b gives way
    assertEquals(List.of("b"), r.preempted().stream().map(SequenceGroup::requestId).toList());
    assertEquals(List.of("a"), ids(r));
    assertEquals(1, s.numPreemptions());
    assertEquals(1, s.numWaiting());
    assertEquals(3, s.blocks().numUsed(), "b's blocks were freed");
    // When a finishes, b resumes by recomputing prompt and generated tokens from position 0.
    s.finish(s.get("a").sequences().get(0));
    ScheduleResult resumed = s.schedule();
    ScheduledChunk c = resumed.chunks().get(0);
    assertEquals("b", c.sequence().group().requestId());
    assertEquals(0, c.start());
    assertArrayEquals(new int[] {1000, 1001, 1002, 7, 7}, c.tokens());
    assertTrue(c.last());
  }

  @Test
  void priorityPolicyOrdersByPriorityThenArrival() {
    SchedulerConfig config = new SchedulerConfig(1, 64, 10, SchedulingPolicy.PRIORITY, true, 0);
    Scheduler s = new Scheduler(config, 64, 4);
    s.add("low", prompt(2), 1, 5);
    s.add("high-1", prompt(2), 1, -1);
    s.add("high-2", prompt(2), 1, -1);
    List<String> order = new ArrayList<>();
    while (s.hasWork()) {
      ScheduleResult r = step(s);
      for (ScheduledChunk c : r.chunks()) {
        order.add(c.sequence().group().requestId());
        s.finish(c.sequence());
      }
    }
    assertEquals(List.of("high-1", "high-2", "low"), order);
  }

  @Test
  void aBetterWaitingRequestPreemptsTheWorstRunningOne() {
    SchedulerConfig config = new SchedulerConfig(8, 64, 10, SchedulingPolicy.PRIORITY, true, 0);
    // 6 blocks of 2: p5 and p3 take 2 each; p0 needs 2 more while p3's decode needs 1.
    Scheduler s = new Scheduler(config, 6, 2);
    s.add("p5", prompt(4), 1, 5);
    s.add("p3", prompt(4), 1, 3);
    step(s);
    assertEquals(4, s.blocks().numUsed());
    s.add("p0", prompt(4), 1, 0);
    ScheduleResult r = step(s);
    assertEquals(List.of("p5"), r.preempted().stream().map(SequenceGroup::requestId).toList());
    assertTrue(ids(r).contains("p0"), () -> ids(r).toString());
    assertFalse(ids(r).contains("p5"));
    // An equal-or-worse waiting request never preempts.
    s.add("p9", prompt(4), 1, 9);
    ScheduleResult r2 = step(s);
    assertTrue(r2.preempted().isEmpty(), () -> r2.preempted() + " " + ids(r2));
  }

  @Test
  void agingLetsALowPriorityRequestOvertakeNewerHighPriorityOnes() {
    SchedulerConfig config = new SchedulerConfig(1, 64, 100, SchedulingPolicy.PRIORITY, true, 2);
    Scheduler s = new Scheduler(config, 64, 4);
    s.add("low", prompt(2), 1, 3);
    // A steady stream of priority-0 requests, one per step, each finishing after one step.
    boolean lowRan = false;
    for (int i = 0; i < 20 && !lowRan; i++) {
      s.add("high-" + i, prompt(2), 1, 0);
      for (ScheduledChunk c : step(s).chunks()) {
        if (c.sequence().group().requestId().equals("low")) lowRan = true;
        s.finish(c.sequence());
      }
    }
    assertTrue(lowRan, "aging must admit the low-priority request");
    // Without aging it starves.
    SchedulerConfig noAging = new SchedulerConfig(1, 64, 100, SchedulingPolicy.PRIORITY, true, 0);
    Scheduler t = new Scheduler(noAging, 64, 4);
    t.add("low", prompt(2), 1, 3);
    for (int i = 0; i < 20; i++) {
      t.add("high-" + i, prompt(2), 1, 0);
      for (ScheduledChunk c : step(t).chunks()) {
        assertFalse(c.sequence().group().requestId().equals("low"));
        t.finish(c.sequence());
      }
    }
  }

  @Test
  void theWaitingQueueIsBounded() {
    Scheduler s = new Scheduler(SchedulerConfig.fcfs(1, 64, 2), 64, 4);
    s.add("a", prompt(2), 1, 0);
    s.add("b", prompt(2), 1, 0);
    assertFalse(s.hasRoom());
    assertThrows(IllegalStateException.class, () -> s.add("c", prompt(2), 1, 0));
    step(s); // a starts running: room again
    assertTrue(s.hasRoom());
  }

  @Test
  void abortFreesBlocksAtOnce() {
    Scheduler s = new Scheduler(SchedulerConfig.fcfs(4, 64, 10), 16, 4);
    s.add("a", prompt(9), 1, 0);
    step(s);
    assertEquals(3, s.blocks().numUsed());
    assertTrue(s.abort("a"));
    assertEquals(0, s.blocks().numUsed());
    assertFalse(s.hasWork());
    assertFalse(s.abort("a"));
  }

  @Test
  void aRequestLargerThanTheCacheIsRefusedNotLoopedForever() {
    Scheduler s = new Scheduler(SchedulerConfig.fcfs(4, 64, 10), 2, 4);
    s.add("huge", prompt(12), 1, 0);
    ScheduleResult r = s.schedule();
    assertEquals(1, r.outOfMemory().size());
    assertFalse(s.hasWork());
    assertEquals(0, s.blocks().numUsed());
  }
}
