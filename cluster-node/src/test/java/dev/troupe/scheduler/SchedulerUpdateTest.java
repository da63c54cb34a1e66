package dev.troupe.scheduler;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.List;
import java.util.stream.IntStream;
import org.junit.jupiter.api.Test;

/** {@link Scheduler#update}: what the engine decided after a step, applied in order. */
class SchedulerUpdateTest {

  private static int[] prompt(int length) {
    return IntStream.range(0, length).map(i -> 1000 + i).toArray();
  }

  @Test
  void aPrefilledPromptSplitsIntoItsChoicesWhichTakeTheirTokens() {
    Scheduler s = new Scheduler(SchedulerConfig.fcfs(8, 64, 10), 8, 4);
    SequenceGroup g = s.add("a", prompt(8), 3, 0);
    ScheduleResult prefill = s.schedule();
    s.update(
        prefill,
        List.of(
            new SequenceUpdate.Split(g, 3),
            new SequenceUpdate.Append(g, 0, 5),
            new SequenceUpdate.Append(g, 1, 6),
            new SequenceUpdate.Finish(g, 2)));
    assertTrue(g.forked());
    assertEquals(3, g.sequences().size());
    assertArrayEquals(new int[] {5}, g.sequences().get(0).outputTokens());
    assertArrayEquals(new int[] {6}, g.sequences().get(1).outputTokens());
    assertTrue(g.sequences().get(2).finished());
    // the prompt's two full blocks were published before the split shared them
    assertEquals(2, s.prefixCache().numCachedBlocks());
    assertEquals(2, s.schedule().chunks().size(), "the finished choice is not scheduled");
  }

  @Test
  void updatesOfARequestThatLeftAreSkippedAndAStalePlanIsRefused() {
    Scheduler s = new Scheduler(SchedulerConfig.fcfs(8, 64, 10), 8, 4);
    SequenceGroup a = s.add("a", prompt(3), 1, 0);
    SequenceGroup b = s.add("b", prompt(3), 1, 0);
    ScheduleResult plan = s.schedule();
    s.abort("a"); // it failed in the engine during the step
    s.update(
        plan,
        List.of(
            new SequenceUpdate.Split(a, 1),
            new SequenceUpdate.Append(a, 0, 9),
            new SequenceUpdate.Split(b, 1),
            new SequenceUpdate.Finish(b, 0)));
    assertEquals(0, a.sequences().get(0).numOutputTokens());
    assertNull(s.get("b"), "b left with its last sequence");
    assertTrue(!s.hasWork());
    s.add("c", prompt(3), 1, 0);
    s.schedule();
    assertThrows(
        IllegalArgumentException.class,
        () -> s.update(plan, List.of()),
        "an older step's plan would publish blocks that may hold other keys now");
  }
}
