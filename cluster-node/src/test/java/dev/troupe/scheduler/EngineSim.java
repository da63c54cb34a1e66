package dev.troupe.scheduler;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.troupe.scheduler.ScheduleResult.BlockCopy;
import dev.troupe.scheduler.ScheduleResult.ScheduledChunk;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.function.ToIntFunction;

/**
 * Plays the engine around a {@link Scheduler} the way the real one does (copies, forward pass,
 * {@link Scheduler#computed}, fork after the prefill, append or finish), with a fake KV cache that
 * records which token each block slot holds. Every chunk is checked to see exactly its own tokens
 * at every earlier position (so a wrong hit, a lost copy or a shared write shows), and no chunk may
 * write into a block someone else holds or that is in the prefix cache.
 */
final class EngineSim {
  final Scheduler s;
  private final int blockSize;
  private final int[][] kv;
  private final Map<String, Integer> maxTokens = new HashMap<>();
  private final ToIntFunction<Sequence> sampler;
  final List<String> completed = new ArrayList<>();

  EngineSim(Scheduler s) {
    this(s, seq -> 7 + seq.index());
  }

  EngineSim(Scheduler s, ToIntFunction<Sequence> sampler) {
    this.s = s;
    this.blockSize = s.blocks().blockSize();
    this.kv = new int[s.blocks().numBlocks()][blockSize];
    for (int[] b : kv) Arrays.fill(b, Integer.MIN_VALUE);
    this.sampler = sampler;
  }

  /** Queues a request that generates {@code tokens} tokens per choice. */
  SequenceGroup add(String id, int[] prompt, int n, int priority, CacheScope scope, int tokens) {
    maxTokens.put(id, tokens);
    return s.add(id, prompt, n, priority, scope);
  }

  SequenceGroup add(String id, int[] prompt, CacheScope scope, int tokens) {
    return add(id, prompt, 1, 0, scope, tokens);
  }

  /** One engine step. */
  ScheduleResult step() {
    ScheduleResult plan = s.schedule();
    for (BlockCopy c : plan.copies()) kv[c.dst()] = kv[c.src()].clone();
    for (ScheduledChunk c : plan.chunks()) checkSeesItsTokens(c);
    for (ScheduledChunk c : plan.chunks()) write(c);
    s.computed(plan);
    for (ScheduledChunk c : plan.chunks()) if (c.last()) sample(c.sequence());
    return plan;
  }

  /** Steps until no work is left. */
  void run() {
    for (int i = 0; i < 100_000 && s.hasWork(); i++) step();
    assertTrue(!s.hasWork(), "the scheduler never drained");
  }

  /** The first chunk of {@code requestId} scheduled by {@link #step()}s until it appears. */
  ScheduledChunk firstChunkOf(String requestId) {
    for (int i = 0; i < 1000; i++) {
      for (ScheduledChunk c : step().chunks())
        if (c.sequence().group().requestId().equals(requestId)) return c;
    }
    throw new AssertionError(requestId + " never ran");
  }

  private void checkSeesItsTokens(ScheduledChunk c) {
    Sequence seq = c.sequence();
    int[] table = c.blockTable();
    for (int p = 0; p < c.start(); p++)
      assertEquals(
          seq.token(p),
          kv[table[p / blockSize]][p % blockSize],
          () -> seq + " reads a wrong key at a position before its chunk");
  }

  private void write(ScheduledChunk c) {
    int[] table = c.blockTable();
    for (int i = 0; i < c.tokens().length; i++) {
      int p = c.start() + i;
      int block = table[p / blockSize];
      assertEquals(1, s.blocks().refCount(block), "writes only into a block it holds alone");
      assertNull(s.blocks().hashOf(block), "never writes into a cached block");
      kv[block][p % blockSize] = c.tokens()[i];
    }
  }

  private void sample(Sequence seq) {
    if (seq.finished()) return;
    SequenceGroup group = seq.group();
    List<Sequence> advance = new ArrayList<>();
    advance.add(seq);
    if (!group.forked()) {
      for (int c = 1; c < group.width(); c++) advance.add(s.fork(seq, c));
      s.markForked(group);
    }
    int max = maxTokens.getOrDefault(group.requestId(), 1);
    for (Sequence q : advance) {
      int token = sampler.applyAsInt(q);
      if (q.numOutputTokens() + 1 >= max) {
        s.finish(q);
        if (group.finished()) completed.add(group.requestId());
      } else {
        q.append(token);
      }
    }
  }
}
