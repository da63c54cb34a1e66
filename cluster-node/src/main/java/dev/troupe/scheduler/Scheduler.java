package dev.troupe.scheduler;

import dev.troupe.scheduler.ScheduleResult.BlockCopy;
import dev.troupe.scheduler.ScheduleResult.ScheduledChunk;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.HashMap;
import java.util.List;
import java.util.Map;

/**
 * Continuous-batching scheduler of one model replica, after vLLM v1's: every step spends a token
 * budget on the running requests first (one token per decoding sequence, chunks of prompts being
 * prefilled), then admits waiting requests in policy order while budget, sequence slots and KV
 * blocks last. A running request that cannot get a block preempts the worst running request
 * (recompute: its blocks are dropped and it re-enters the waiting queue at its arrival position).
 * With the priority policy a better waiting request also preempts a worse running one.
 *
 * <p>A request is prefilled once and then forked by the engine into its n choices ({@link #fork}),
 * which share the prompt's blocks; a sequence about to write into a shared block gets a private
 * copy first ({@link ScheduleResult#copies()}).
 *
 * <p>With prefix caching ({@link PrefixCache}) a sequence that starts from nothing (a new request,
 * or one resumed after preemption) first takes the cached blocks of its longest known prefix and is
 * scheduled from there. The engine reports each step's forward pass with {@link
 * #computed(ScheduleResult)}; only then do the blocks it filled become cache entries.
 *
 * <p>Plain Java, not thread-safe: owned by one worker, called from its thread only.
 */
public final class Scheduler {
  private final SchedulerConfig config;
  private final BlockAllocator blocks;
  private final PrefixCache prefixCache;
  private final List<SequenceGroup> waiting = new ArrayList<>();
  private final List<SequenceGroup> running = new ArrayList<>();
  private final Map<String, SequenceGroup> byId = new HashMap<>();
  private long arrivals;
  private long step;
  private long preemptions;

  public Scheduler(SchedulerConfig config, int numBlocks, int blockSize) {
    this.config = config;
    this.blocks = new BlockAllocator(numBlocks, blockSize);
    this.prefixCache = new PrefixCache(blocks, config.prefixCaching());
  }

  public SchedulerConfig config() {
    return config;
  }

  public BlockAllocator blocks() {
    return blocks;
  }

  public PrefixCache prefixCache() {
    return prefixCache;
  }

  /** Whether the waiting queue can take one more request. */
  public boolean hasRoom() {
    return waiting.size() < config.maxWaiting();
  }

  /** Queues a request on the base model without salt ({@link CacheScope#BASE}). */
  public SequenceGroup add(String requestId, int[] prompt, int width, int priority) {
    return add(requestId, prompt, width, priority, CacheScope.BASE);
  }

  /**
   * Queues a request.
   *
   * @param width sequences it forks into after its prefill (n, or the beam width)
   * @param scope the prefix-cache extra keys (adapter, salt) and whether it reads the cache
   * @throws IllegalStateException when the queue is full ({@link #hasRoom()}) or the id is in use
   */
  public SequenceGroup add(
      String requestId, int[] prompt, int width, int priority, CacheScope scope) {
    if (!hasRoom()) throw new IllegalStateException("waiting queue is full");
    if (byId.containsKey(requestId))
      throw new IllegalStateException("request " + requestId + " is already scheduled");
    if (prompt.length == 0) throw new IllegalArgumentException("empty prompt");
    if (width < 1) throw new IllegalArgumentException("width must be >= 1");
    if (width > config.maxNumSeqs())
      throw new IllegalArgumentException(
          "width " + width + " exceeds max running sequences " + config.maxNumSeqs());
    if (scope == null) throw new IllegalArgumentException("scope is required");
    SequenceGroup group =
        new SequenceGroup(requestId, priority, arrivals++, step, prompt, width, scope);
    waiting.add(group);
    byId.put(requestId, group);
    return group;
  }

  /**
   * Holds a just-added request out of scheduling while the keys and values of its prompt but the
   * last token are imported from another replica (disaggregated prefill): it takes its cached
   * prefix and fresh blocks for the rest of those positions now, and counts them as computed. The
   * caller writes the fresh blocks, then {@link #releaseImport}s the request; or lets it compute
   * its prompt itself ({@link #cancelImport}), or aborts it.
   *
   * @return the request's block table, of which the first {@code cachedBlocks} are its cached
   *     prefix; null (nothing held) when too few blocks are free now
   */
  public Import holdForImport(SequenceGroup group) {
    if (!waiting.contains(group) || group.sequences().size() != 1)
      throw new IllegalStateException(group.requestId() + " is not a new waiting request");
    Sequence seq = group.sequences().get(0);
    int positions = seq.numTokens() - 1; // the last token is computed here, for its logits
    int need = blocks.blocksFor(positions);
    int[] hit = prefixCache.findHit(seq);
    int fresh = need - hit.length;
    int freeHits = 0;
    for (int b : hit) if (blocks.refCount(b) == 0) freeHits++;
    if (blocks.numFree() - freeHits < fresh) return null;
    int[] table = new int[need];
    for (int i = 0; i < hit.length; i++) {
      blocks.touch(hit[i]);
      table[i] = hit[i];
    }
    for (int i = hit.length; i < need; i++) table[i] = blocks.allocate();
    waiting.remove(group);
    seq.setBlockTable(table);
    seq.setNumComputed(positions);
    seq.setNumPublished(hit.length);
    return new Import(table, hit.length);
  }

  /** A request held for import: its block table and how many of it were cached already. */
  public record Import(int[] table, int cachedBlocks) {}

  /** The held request's blocks are written: it is scheduled from its last prompt token. */
  public void releaseImport(SequenceGroup group) {
    if (byId.get(group.requestId()) != group) return;
    if (!waiting.contains(group) && !running.contains(group)) waiting.add(group);
  }

  /** The import failed: the held request drops its blocks and computes its whole prompt itself. */
  public void cancelImport(SequenceGroup group) {
    if (byId.get(group.requestId()) != group) return;
    freeBlocks(group);
    if (!waiting.contains(group) && !running.contains(group)) waiting.add(group);
  }

  public SequenceGroup get(String requestId) {
    return byId.get(requestId);
  }

  public boolean hasWork() {
    return !waiting.isEmpty() || !running.isEmpty();
  }

  public int numWaiting() {
    return waiting.size();
  }

  /** Requests holding cache blocks (possibly mid-prefill). */
  public int numRunning() {
    return running.size();
  }

  public int numRunningSequences() {
    return seatsTaken();
  }

  /** Tokens the waiting requests still have to compute (prompts, and what preemption dropped). */
  public long numWaitingTokens() {
    long n = 0;
    for (SequenceGroup g : waiting)
      for (Sequence s : g.live()) n += s.numTokens() - s.numComputed();
    return n;
  }

  /** Preemptions since start. */
  public long numPreemptions() {
    return preemptions;
  }

  public long step() {
    return step;
  }

  // ------------------------------------------------------------------ scheduling

  /** Decides the next step's batch; computed-token counts advance as if it ran. */
  public ScheduleResult schedule() {
    step++;
    List<ScheduledChunk> chunks = new ArrayList<>();
    List<BlockCopy> copies = new ArrayList<>();
    List<SequenceGroup> preempted = new ArrayList<>();
    List<SequenceGroup> outOfMemory = new ArrayList<>();
    int budget = config.maxNumBatchedTokens();

    if (config.policy() == SchedulingPolicy.PRIORITY) preemptForWaiting(preempted);

    boolean cacheFull = false;
    running.sort(order());
    for (int i = 0; i < running.size() && budget > 0; i++) {
      SequenceGroup group = running.get(i);
      while (true) {
        Placement attempt = tryPlace(group, budget);
        if (attempt.placed()) {
          budget -= attempt.commit(chunks, copies);
          break;
        }
        attempt.undo();
        if (!attempt.outOfBlocks()) break; // nothing of it fits this step's budget
        // Out of blocks: the worst running request gives way (it is after i: not scheduled yet).
        cacheFull = true;
        SequenceGroup victim = running.get(running.size() - 1);
        if (victim == group && running.size() == 1) {
          drop(group);
          outOfMemory.add(group);
          i--;
          break;
        }
        preempt(victim);
        preempted.add(victim);
        if (victim == group) {
          i--;
          break;
        }
      }
    }

    // vLLM v1: no admissions in a step whose running requests had to preempt (the cache is full).
    if (!cacheFull) {
      while (budget > 0 && !waiting.isEmpty()) {
        SequenceGroup group = bestWaiting();
        if (seatsTaken() + group.seats() > config.maxNumSeqs()) break;
        Placement attempt = tryPlace(group, budget);
        if (!attempt.placed()) {
          attempt.undo();
          boolean alone = running.isEmpty() && budget == config.maxNumBatchedTokens();
          if (alone) {
            // Even an empty cache and a whole budget cannot hold it: refuse rather than wait
            // forever.
            drop(group);
            outOfMemory.add(group);
            continue;
          }
          break;
        }
        budget -= attempt.commit(chunks, copies);
        waiting.remove(group);
        running.add(group);
      }
    }
    return new ScheduleResult(step, chunks, copies, preempted, outOfMemory);
  }

  /**
   * Priority policy: while the best waiting request cannot start (no seat, or too few blocks once
   * the running requests have taken what their next tokens need), preempt the worst running request
   * if it is worse than that waiting one.
   */
  private void preemptForWaiting(List<SequenceGroup> preempted) {
    Comparator<SequenceGroup> order = order();
    while (!waiting.isEmpty() && !running.isEmpty()) {
      SequenceGroup best = bestWaiting();
      int runningNeeds = 0;
      for (SequenceGroup g : running) runningNeeds += blocksNeeded(g);
      boolean seats = seatsTaken() + best.seats() <= config.maxNumSeqs();
      boolean room = blocks.numFree() - runningNeeds >= blocksNeeded(best);
      if (seats && room) return;
      SequenceGroup worst = running.stream().max(order).orElseThrow();
      if (order.compare(worst, best) <= 0) return;
      preempt(worst);
      preempted.add(worst);
    }
  }

  /** Blocks the group's next step would take (new positions and copy-on-write), within a budget. */
  private int blocksNeeded(SequenceGroup group) {
    int need = 0;
    int budget = config.maxNumBatchedTokens();
    for (Sequence s : group.live()) {
      if (budget <= 0) break;
      int[] table = s.blockTableRef();
      int computed = s.numComputed();
      if (table.length == 0 && computed == 0) {
        // It would start from its cached prefix; hit blocks no one holds leave the free pool.
        table = prefixCache.findHit(s);
        computed = table.length * blocks.blockSize();
        for (int b : table) if (blocks.refCount(b) == 0) need++;
      }
      int n = Math.min(Math.min(s.numTokens() - computed, group.maxChunkTokens()), budget);
      if (n == 0) continue;
      budget -= n;
      int first = computed / blocks.blockSize();
      int last = (computed + n - 1) / blocks.blockSize();
      need += Math.max(0, last + 1 - table.length);
      for (int b = first; b <= last && b < table.length; b++)
        if (blocks.refCount(table[b]) > 1) need++;
    }
    return need;
  }

  /** Best first: arrival for FCFS; (aged priority, arrival) for the priority policy. */
  private Comparator<SequenceGroup> order() {
    if (config.policy() == SchedulingPolicy.FCFS)
      return Comparator.comparingLong(SequenceGroup::arrival);
    return Comparator.comparingLong(this::effectivePriority)
        .thenComparingLong(SequenceGroup::arrival);
  }

  /** Priority minus one for every {@code agingSteps} steps since arrival. */
  long effectivePriority(SequenceGroup group) {
    long aged = config.agingSteps() == 0 ? 0 : (step - group.arrivalStep()) / config.agingSteps();
    return group.priority() - aged;
  }

  private SequenceGroup bestWaiting() {
    return waiting.stream().min(order()).orElseThrow();
  }

  private int seatsTaken() {
    int seats = 0;
    for (SequenceGroup g : running) seats += g.seats();
    return seats;
  }

  /**
   * Reserves blocks for the group's next tokens within the budget. Block tables change right away;
   * {@link Placement#undo()} gives the new blocks back.
   */
  private Placement tryPlace(SequenceGroup group, int budget) {
    Placement attempt = new Placement(group, blocks, prefixCache);
    for (Sequence seq : group.live()) {
      if (budget == 0) break;
      if (seq.blockTableRef().length == 0 && seq.numComputed() == 0) attempt.takeCachedPrefix(seq);
      int need = Math.min(seq.numTokens() - seq.numComputed(), group.maxChunkTokens());
      if (need == 0) continue;
      // Without chunked prefill a prompt runs whole (or in its group's own chunks) or waits for a
      // step with enough budget.
      if (need > budget && !config.chunkedPrefill()) break;
      int n = Math.min(need, budget);
      if (!attempt.reserve(seq, n)) {
        attempt.markOutOfBlocks();
        return attempt;
      }
      budget -= n;
    }
    return attempt;
  }

  // ------------------------------------------------------------------ lifecycle

  /** Drops the group's cache and sends it back to waiting, to be recomputed from scratch. */
  private void preempt(SequenceGroup group) {
    freeBlocks(group);
    running.remove(group);
    waiting.add(group);
    group.countPreemption();
    preemptions++;
  }

  /**
   * Sends a running request back to waiting with its cache dropped, to be recomputed from scratch
   * when it is scheduled again: what the engine does with the requests of a step whose forward pass
   * failed (their new blocks may hold partial writes, and were never published). Unlike a
   * preemption it is not counted.
   */
  public void recompute(SequenceGroup group) {
    if (byId.get(group.requestId()) != group)
      throw new IllegalArgumentException("unknown request " + group.requestId());
    freeBlocks(group);
    if (running.remove(group)) waiting.add(group);
  }

  private void drop(SequenceGroup group) {
    freeBlocks(group);
    running.remove(group);
    waiting.remove(group);
    byId.remove(group.requestId());
    for (Sequence s : group.sequences()) if (!s.finished()) s.markFinished();
  }

  private void freeBlocks(SequenceGroup group) {
    for (Sequence s : group.sequences()) {
      releaseAll(s);
      s.setNumComputed(0);
    }
  }

  /**
   * Lets go of all of {@code seq}'s blocks, last block first: cached ones become eviction
   * candidates in that order, so a request's tail is evicted before its head (as vLLM).
   */
  private void releaseAll(Sequence seq) {
    int[] table = seq.blockTableRef();
    for (int i = table.length - 1; i >= 0; i--) blocks.release(table[i]);
    seq.setBlockTable(new int[0]);
    seq.setNumPublished(0);
  }

  /**
   * A new sequence continuing {@code parent}: same tokens, sharing its blocks. Used to split a
   * prefilled prompt into its choices and to branch beams.
   */
  public Sequence fork(Sequence parent, int index) {
    if (parent.finished()) throw new IllegalStateException("cannot fork a finished sequence");
    Sequence child = parent.copyAs(index);
    for (int b : child.blockTableRef()) blocks.share(b);
    parent.group().add(child);
    parent.group().markForked();
    return child;
  }

  /** Marks the group as split into its choices (width 1 requests never fork). */
  public void markForked(SequenceGroup group) {
    group.markForked();
  }

  /** A sequence is done: its blocks are released now; the request leaves with its last one. */
  public void finish(Sequence seq) {
    if (seq.finished()) return;
    releaseAll(seq);
    seq.markFinished();
    SequenceGroup group = seq.group();
    if (group.finished()) {
      running.remove(group);
      waiting.remove(group);
      byId.remove(group.requestId());
    }
  }

  /**
   * The engine ran {@code plan} and decided what becomes of its sequences, as vLLM v1's {@code
   * update_from_output} (the decisions — samplers, stop rules — are the engine's; the scheduler
   * applies them): the blocks the plan filled become prefix-cache entries ({@link #computed}), then
   * each update in order. Updates of a request that left meanwhile (it failed, or was aborted) are
   * skipped.
   *
   * @throws IllegalArgumentException when {@code plan} is not the latest {@link #schedule()} result
   */
  public void update(ScheduleResult plan, List<SequenceUpdate> updates) {
    computed(plan);
    for (SequenceUpdate u : updates) {
      SequenceGroup group = u.group();
      if (byId.get(group.requestId()) != group) continue;
      if (u instanceof SequenceUpdate.Split split) {
        Sequence prompt = sequence(group, 0);
        group.markForked();
        for (int c = 1; c < split.into(); c++) fork(prompt, c);
      } else if (u instanceof SequenceUpdate.Append a) {
        sequence(group, a.index()).append(a.token());
      } else if (u instanceof SequenceUpdate.Finish f) {
        finish(sequence(group, f.index()));
      }
    }
  }

  private static Sequence sequence(SequenceGroup group, int index) {
    for (Sequence s : group.sequences()) if (s.index() == index) return s;
    throw new IllegalArgumentException(group.requestId() + " has no sequence " + index);
  }

  /**
   * The engine ran {@code plan}'s forward pass: the blocks its chunks filled hold computed keys and
   * values now and become prefix-cache entries. Call it after the forward pass and before finishing
   * or forking any sequence of that step; a plan that was not computed (the pass failed) must not
   * be reported, so nothing stale is ever published.
   *
   * @throws IllegalArgumentException when {@code plan} is not the latest {@link #schedule()} result
   */
  void computed(ScheduleResult plan) {
    if (plan.step() != step)
      throw new IllegalArgumentException(
          "step " + plan.step() + " is not the latest scheduled step (" + step + ")");
    for (ScheduledChunk c : plan.chunks()) {
      Sequence seq = c.sequence();
      if (!seq.finished()) prefixCache.publish(seq);
    }
  }

  /** Removes a request wherever it is, freeing its blocks; false if unknown. */
  public boolean abort(String requestId) {
    SequenceGroup group = byId.get(requestId);
    if (group == null) return false;
    drop(group);
    return true;
  }
}
