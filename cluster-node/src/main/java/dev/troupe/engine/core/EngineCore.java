package dev.troupe.engine.core;

import dev.troupe.engine.DeviceInfo;
import dev.troupe.engine.LoraAdapter;
import dev.troupe.engine.ModelRunner;
import dev.troupe.engine.ModelRunner.SequenceChunk;
import dev.troupe.engine.core.Outputs.RequestOutputBuilder;
import dev.troupe.engine.core.StepOutput.ChoiceOutput;
import dev.troupe.engine.sampling.BatchSampler;
import dev.troupe.engine.sampling.BeamSearch;
import dev.troupe.engine.sampling.FinishReason;
import dev.troupe.engine.sampling.InvalidSamplingParamsException;
import dev.troupe.engine.sampling.Sample;
import dev.troupe.engine.sampling.SamplerFactory;
import dev.troupe.engine.sampling.SamplingStage;
import dev.troupe.engine.sampling.StepLogprobs;
import dev.troupe.engine.sampling.StopChecker.Finish;
import dev.troupe.engine.sampling.StopTokens;
import dev.troupe.scheduler.CacheScope;
import dev.troupe.scheduler.ScheduleResult;
import dev.troupe.scheduler.ScheduleResult.ScheduledChunk;
import dev.troupe.scheduler.Scheduler;
import dev.troupe.scheduler.SchedulingPolicy;
import dev.troupe.scheduler.Sequence;
import dev.troupe.scheduler.SequenceGroup;
import dev.troupe.scheduler.SequenceUpdate;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * One model replica's engine core, as vLLM v1's {@code EngineCore}: the {@link Scheduler}, the
 * {@link ModelRunner} and the sampling stage. It takes prepared requests ({@link #add}), runs one
 * step at a time ({@link #step}: schedule, one forward pass over every chunk together with one
 * sampling stage over every row that needs a token ({@link SamplingStage}: on the runner's device
 * where it can), token stops) and reports plain per-request outputs: token ids, finishes, logprobs
 * as ids and floats. No text, no wire types: the output processor turns outputs into text and the
 * worker into messages.
 *
 * <p>The n choices of a request share one prefill: its prompt is one sequence, forked into n when
 * its logits exist; each choice samples from them with its own RNG. Beam search runs through a
 * {@link BeamDriver} and reports its best beams whole at the end.
 *
 * <p>Isolation: whatever fails on one request's data (its sampler, a custom logits processor, a
 * token constraint, its prompt logprobs, its beam search) fails that request alone ({@link
 * StepOutput#failures()}) and the step goes on. A failed forward pass concerns every request of the
 * step: they are sent back to be recomputed, and only a request whose steps keep failing ({@value
 * #MAX_FORWARD_ATTEMPTS} times) is failed.
 *
 * <p>Thread: confined to its owner's (the runner is). Not thread-safe.
 */
public final class EngineCore implements AutoCloseable {
  private static final Logger log = LoggerFactory.getLogger(EngineCore.class);

  /** Forward passes a request may see fail before it is failed rather than recomputed. */
  static final int MAX_FORWARD_ATTEMPTS = 3;

  private final ModelRunner runner;
  private final Scheduler scheduler;
  private final SamplerFactory samplers;
  private final SamplingStage sampling;
  private final SchedulingPolicy policy;
  private final int maxModelLen;
  private final Map<String, CoreRequest> active = new LinkedHashMap<>();
  private final KvLeases kvLeases;
  private long importedBlocks;
  private final LatencyStats latencies;
  private long generatedTokens;
  private long promptTokens;

  public EngineCore(
      ModelRunner runner,
      EngineSettings settings,
      SchedulingPolicy policy,
      SamplerFactory samplers) {
    this.runner = runner;
    this.policy = policy;
    this.samplers = samplers;
    this.maxModelLen = settings.maxModelLen(runner);
    this.latencies = new LatencyStats(maxModelLen);
    this.sampling = SamplingStage.of(runner);
    this.scheduler =
        new Scheduler(settings.schedulerConfig(policy), runner.numBlocks(), runner.blockSize());
    this.kvLeases = new KvLeases(runner, scheduler.blocks());
  }

  /** Prompt blocks held for decode replicas to pull (disaggregated prefill). */
  public KvLeases kvLeases() {
    return kvLeases;
  }

  /** The runner's KV layout (what a decode or prefill peer must match). */
  public dev.troupe.engine.KvLayout kvLayout() {
    return runner.kvLayout();
  }

  /**
   * Holds the just-added request {@code id} out of scheduling while its prompt's keys and values
   * (all positions but the last) are imported from a prefill replica ({@link
   * Scheduler#holdForImport}); null when too few blocks are free now.
   */
  public Scheduler.Import holdForImport(String id) {
    CoreRequest r = active.get(id);
    if (r == null) throw new IllegalArgumentException("unknown request " + id);
    return scheduler.holdForImport(r.group);
  }

  /**
   * Writes the pulled blocks of held request {@code id} into {@code blocks} and lets it run from
   * its last prompt token. False when the request has left meanwhile (its blocks are freed).
   */
  public boolean completeImport(String id, int[] blocks, byte[] data) {
    CoreRequest r = active.get(id);
    if (r == null) return false;
    runner.importBlocks(blocks, data);
    importedBlocks += blocks.length;
    scheduler.releaseImport(r.group);
    return true;
  }

  /** KV blocks imported from prefill replicas since start. */
  public long importedBlocks() {
    return importedBlocks;
  }

  /** The pull for held request {@code id} failed: it computes its whole prompt here instead. */
  public void cancelImport(String id) {
    CoreRequest r = active.get(id);
    if (r != null) scheduler.cancelImport(r.group);
  }

  /** The context length: configured, else the model's, never more than the cache holds. */
  public int maxModelLen() {
    return maxModelLen;
  }

  public SchedulingPolicy policy() {
    return policy;
  }

  public Scheduler scheduler() {
    return scheduler;
  }

  /** The sampling stage: where rows are sampled, and how many on the device and on the host. */
  public SamplingStage sampling() {
    return sampling;
  }

  /**
   * The runner, for work its owner runs on this thread between two steps (a training step on the
   * serving GPU); never for a step of its own.
   */
  public ModelRunner runner() {
    return runner;
  }

  /** Where the model runs. */
  public DeviceInfo device() {
    return runner.deviceInfo();
  }

  /** Prompt tokens of the requests admitted since start, once per request whatever n is. */
  public long promptTokens() {
    return promptTokens;
  }

  /** Tokens generated since start, every choice counted. */
  public long generatedTokens() {
    return generatedTokens;
  }

  /** Queue, prefill, decode, inference and inter-token latencies of the requests so far. */
  public LatencyStats latencies() {
    return latencies;
  }

  public boolean hasWork() {
    return scheduler.hasWork();
  }

  public boolean isActive(String requestId) {
    return active.containsKey(requestId);
  }

  // ------------------------------------------------------------------ admission

  /**
   * Queues a prepared request: cheap, nothing of the request's own code runs here (the input
   * processor did that). Returns null when queued, else why not: the waiting queue is full
   * (overloaded) or the id is in flight.
   */
  public Rejection add(EngineRequest r) {
    String id = r.requestId();
    if (active.containsKey(id))
      return Rejection.badRequest("request id " + id + " is already in flight", "request_id");
    if (!scheduler.hasRoom())
      return new Rejection(
          Rejection.Kind.OVERLOADED,
          "The server is overloaded: "
              + scheduler.numWaiting()
              + " requests are already waiting. Retry later.",
          null);
    var p = r.sampling();
    int[] prompt = r.promptTokenIds();
    CoreRequest.Choice[] choices = new CoreRequest.Choice[p.n()];
    BeamDriver beam = null;
    if (p.useBeamSearch()) {
      for (int i = 0; i < choices.length; i++) choices[i] = new CoreRequest.Choice(null, null);
      beam = new BeamDriver(BeamSearch.create(p, prompt.length, samplers.eos()));
    } else {
      for (int i = 0; i < choices.length; i++)
        choices[i] =
            new CoreRequest.Choice(
                samplers.create(p, r.setup(), prompt, i), new StopTokens(p, samplers.eos()));
    }
    if (r.resumed() != null && beam == null) {
      Rejection inconsistent = Resumption.replay(r.resumed(), choices);
      if (inconsistent != null) return inconsistent;
    }
    // Prefix-cache keys: the adapter's weights and the salt; prompt logprobs need every position.
    CacheScope scope = new CacheScope(r.adapterKey(), r.cacheSalt(), p.promptLogprobs() == null);
    SequenceGroup group = scheduler.add(id, prompt, p.n(), r.priority(), scope);
    // Every prompt position needs its logits row: a bounded number of rows per step.
    if (p.promptLogprobs() != null) group.limitChunks(promptLogitsRows(samplers.vocabSize()));
    CoreRequest request = new CoreRequest(r, group, choices, beam);
    if (r.resumed() != null && beam == null) Resumption.fork(request, scheduler);
    latencies.admitted(request, System.nanoTime());
    active.put(id, request);
    promptTokens += prompt.length;
    return null;
  }

  /**
   * The logits one step may compute for one request's prompt logprobs: every prompt position of a
   * chunk needs a row of the vocabulary's width, so a 3,000-token prompt in one 2,048-token step
   * held 1.2 GB of them (a 152k vocabulary) and stalled the batch for seconds. Bounded instead, the
   * prompt is computed over more steps, between which the other requests decode.
   */
  static final long PROMPT_LOGITS_BYTES = 64L << 20;

  /** Prompt tokens per step for a prompt-logprobs request: {@link #PROMPT_LOGITS_BYTES} of rows. */
  static int promptLogitsRows(int vocabSize) {
    return (int) Math.max(1, PROMPT_LOGITS_BYTES / (4L * Math.max(1, vocabSize)));
  }

  /** Removes a request now, wherever it is, freeing its blocks; false if unknown. */
  public boolean abort(String requestId) {
    CoreRequest r = active.remove(requestId);
    if (r == null) return false;
    latencies.left(r);
    kvLeases.forget(requestId);
    scheduler.abort(requestId);
    return true;
  }

  /**
   * Ends choice {@code index} of a running request now (a stop string matched in its text: the
   * output processor's decision, as vLLM v1's output processor aborts in the core). Its blocks are
   * freed; the request leaves with its last choice. Unknown ids and finished choices are ignored.
   */
  public void finishChoice(String requestId, int index) {
    CoreRequest r = active.get(requestId);
    if (r == null || r.beam != null || index >= r.choices.length) return;
    CoreRequest.Choice c = r.choices[index];
    if (c.finished) return;
    c.finished = true;
    if (c.sequence != null) scheduler.finish(c.sequence);
    if (r.allFinished()) abort(requestId);
  }

  // ------------------------------------------------------------------ stepping

  /**
   * One step, as vLLM v1's: {@link Scheduler#schedule} the chunks, execute them (one forward pass
   * and one sampling stage), then update — the engine decides what each sampled choice does (its
   * sampler accepts the token, its stops may end it) and {@link Scheduler#update} applies it.
   */
  public StepOutput step() {
    Outputs out = new Outputs();
    ScheduleResult plan = scheduler.schedule();
    for (SequenceGroup group : plan.outOfMemory()) outOfMemory(group, out);
    if (plan.isEmpty()) return out.build();
    Batch batch = batch(plan);
    SamplingStage.Result result = execute(plan, batch, out);
    if (result != null) update(plan, batch, result, out);
    return out.build();
  }

  /**
   * What the step computes, known before the forward pass (a device samples inside it): its chunks,
   * the chunks whose logits the core needs itself (prompt logprobs, beam search), and the rows that
   * need a token with whose choice each is.
   */
  private record Batch(
      List<SequenceChunk> chunks,
      boolean[] hostLogits,
      List<SamplingStage.Row> rows,
      List<RowOwner> owners) {}

  /** Whose row a sampled row is: a request and its choice index. */
  private record RowOwner(CoreRequest request, int choice) {}

  private Batch batch(ScheduleResult plan) {
    int chunks = plan.chunks().size();
    List<SequenceChunk> batch = new ArrayList<>(chunks);
    long scheduledAt = System.nanoTime();
    boolean[] hostLogits = new boolean[chunks];
    List<SamplingStage.Row> rows = new ArrayList<>();
    List<RowOwner> owners = new ArrayList<>();
    for (int i = 0; i < chunks; i++) {
      ScheduledChunk c = plan.chunks().get(i);
      CoreRequest r = active.get(c.sequence().group().requestId());
      latencies.scheduled(r, scheduledAt, c.tokens().length);
      boolean all = r.wantsPromptLogits(c);
      // the prompt length tells the runner which rows are prompt (docs/engine.md: a row's path)
      int promptLength = c.sequence().promptLength();
      batch.add(
          new SequenceChunk(
              c.tokens(), c.start(), c.blockTable(), all, r.request.adapterId(), promptLength));
      hostLogits[i] = all || (c.last() && r.beam != null);
      if (!c.last() || r.beam != null) continue;
      // a prefilled prompt is sampled once per choice (split below); a choice's own sequence once
      boolean prompt = !c.sequence().group().forked();
      int from = prompt ? 0 : c.sequence().index(), to = prompt ? r.choices.length : from + 1;
      for (int k = from; k < to; k++) {
        rows.add(new SamplingStage.Row(i, r.choices[k].sampler));
        owners.add(new RowOwner(r, k));
      }
    }
    return new Batch(batch, hostLogits, rows, owners);
  }

  /** The block copies and the pass; null when it failed (its requests are recomputed). */
  private SamplingStage.Result execute(ScheduleResult plan, Batch batch, Outputs out) {
    try {
      for (ScheduleResult.BlockCopy copy : plan.copies()) runner.copyBlock(copy.src(), copy.dst());
      return sampling.run(batch.chunks(), batch.hostLogits(), batch.rows());
    } catch (RuntimeException | StackOverflowError | OutOfMemoryError e) {
      recomputeAfterFailedForward(plan, e, out);
      return null;
    }
  }

  /** The step's outcome: prompt logprobs, prefilled prompts split, tokens taken, beams stepped. */
  private void update(ScheduleResult plan, Batch batch, SamplingStage.Result result, Outputs out) {
    List<SequenceUpdate> updates = new ArrayList<>();
    List<CoreRequest> split = new ArrayList<>();
    Set<CoreRequest> beams = new LinkedHashSet<>();
    for (int i = 0; i < plan.chunks().size(); i++) {
      ScheduledChunk chunk = plan.chunks().get(i);
      CoreRequest r = active.get(chunk.sequence().group().requestId());
      if (r == null) continue; // failed earlier in this step
      float[][] chunkLogits = result.logits().get(i);
      if (batch.chunks().get(i).allLogits()
          && !perRequest(r, out, () -> r.collectPromptLogprobs(chunk, chunkLogits))) continue;
      if (!chunk.last()) continue;
      Sequence seq = chunk.sequence();
      if (!seq.group().forked()) {
        if (!r.started) {
          r.started = true;
          out.of(r).first = true;
        }
        // a remote-decode request keeps its prompt's blocks for the decode replica to pull
        if (kvLeases.wants(r.id()))
          kvLeases.prefilled(r.id(), seq.blockTable(), seq.numTokens(), System.nanoTime());
        // the prompt is prefilled: it splits into the request's choices, sharing its blocks
        updates.add(new SequenceUpdate.Split(seq.group(), r.beam != null ? 1 : r.choices.length));
        if (r.beam == null) {
          split.add(r);
          continue;
        }
        r.beam.prefilled(seq);
      }
      if (r.beam != null) {
        r.beam.offer(seq, chunkLogits[chunkLogits.length - 1]);
        beams.add(r);
      }
    }
    List<BatchSampler.Outcome> samples = result.outcomes();
    for (int i = 0; i < samples.size(); i++) {
      CoreRequest r = batch.owners().get(i).request();
      int choice = batch.owners().get(i).choice();
      if (active.get(r.id()) != r) continue; // failed or finished earlier in this step
      BatchSampler.Outcome o = samples.get(i);
      if (o.failed()) fail(r, o.error(), out);
      else perRequest(r, out, () -> advance(r, choice, o.sample(), updates, out));
    }
    scheduler.update(plan, updates);
    for (CoreRequest r : split)
      for (int c = 0; c < r.choices.length; c++) r.choices[c].sequence = r.group.sequences().get(c);
    for (CoreRequest r : beams)
      if (active.containsKey(r.id()) && r.beam.ready()) perRequest(r, out, () -> stepBeams(r, out));
    out.timed(latencies, System.nanoTime());
  }

  /** Takes a sampled token into its choice, or finishes the choice with it. */
  private void advance(
      CoreRequest r, int index, Sample sample, List<SequenceUpdate> updates, Outputs out) {
    CoreRequest.Choice choice = r.choices[index];
    int token = sample.token();
    choice.sampler.accept(token);
    Finish finish = choice.stops.check(token);
    if (finish == null && choice.sampler.constraintFinished())
      finish = new Finish(FinishReason.STOP, null, samplers.eos().isEos(token) ? null : token);
    // the budget ended the output (the constraint only kept it valid): reported as a cut
    if (finish != null
        && finish.reason() == FinishReason.STOP
        && choice.sampler.constraintCompletedByBudget())
      finish = new Finish(FinishReason.LENGTH, null, null);
    generatedTokens++;
    Integer k = r.params().logprobs();
    List<StepLogprobs> logprobs =
        k == null
            ? null
            : List.of(new StepLogprobs(sample.logprobs().get(0), sample.chatTopLogprobs(k)));
    out.of(r)
        .choices
        .put(index, new ChoiceOutput(index, new int[] {token}, logprobs, finish, false));
    if (finish != null) {
      updates.add(new SequenceUpdate.Finish(r.group, index));
      choice.finished = true;
      if (r.allFinished()) {
        active.remove(r.id());
        out.of(r).finished = true;
        out.leaving.add(r);
      }
    } else {
      updates.add(new SequenceUpdate.Append(r.group, index, token));
    }
  }

  /** One beam-search step; when the search ends, the best beams are the request's choices. */
  private void stepBeams(CoreRequest r, Outputs out) {
    List<BeamSearch.Result> results = r.beam.step(scheduler);
    if (results == null) return;
    RequestOutputBuilder o = out.of(r);
    for (int i = 0; i < r.choices.length; i++) {
      r.choices[i].finished = true;
      if (i >= results.size()) {
        o.choices.put(
            i,
            new ChoiceOutput(
                i, new int[0], null, new Finish(FinishReason.LENGTH, null, null), true));
        continue;
      }
      BeamSearch.Result b = results.get(i);
      generatedTokens += b.tokens().length;
      Finish finish =
          b.finishReason() == FinishReason.STOP
              ? new Finish(FinishReason.STOP, null, b.stopTokenId())
              : new Finish(FinishReason.LENGTH, null, null);
      List<StepLogprobs> logprobs =
          r.params().logprobs() != null && b.details() != null ? b.details() : null;
      o.choices.put(i, new ChoiceOutput(i, b.tokens(), logprobs, finish, true));
    }
    abort(r.id());
    o.finished = true;
  }

  /** A request that cannot fit the cache even alone: refused, or ended where it is. */
  private void outOfMemory(SequenceGroup group, Outputs out) {
    CoreRequest r = active.remove(group.requestId());
    if (r == null) return;
    latencies.left(r);
    if (!r.started) {
      out.fail(
          r,
          Rejection.badRequest(
              "The request does not fit the KV cache of "
                  + runner.numBlocks()
                  + " blocks of "
                  + runner.blockSize()
                  + " tokens; reduce n or the prompt.",
              "messages"));
      return;
    }
    RequestOutputBuilder o = out.of(r);
    for (int i = 0; i < r.choices.length; i++) {
      if (r.choices[i].finished) continue;
      r.choices[i].finished = true;
      o.choices.put(
          i,
          new ChoiceOutput(
              i, new int[0], null, new Finish(FinishReason.LENGTH, null, null), false));
    }
    o.finished = true;
  }

  /**
   * The forward pass (or a block copy before it) threw: every request of the step is recomputed
   * from scratch next time; one that has now failed {@value #MAX_FORWARD_ATTEMPTS} times is failed.
   */
  private void recomputeAfterFailedForward(ScheduleResult plan, Throwable e, Outputs out) {
    Set<SequenceGroup> groups = new LinkedHashSet<>();
    for (ScheduledChunk c : plan.chunks()) groups.add(c.sequence().group());
    log.error("forward pass failed; recomputing the {} requests of the step", groups.size(), e);
    for (SequenceGroup g : groups) {
      CoreRequest r = active.get(g.requestId());
      if (r == null) continue;
      if (++r.forwardFailures >= MAX_FORWARD_ATTEMPTS)
        fail(
            r,
            Rejection.internal(
                "The model's forward pass failed "
                    + r.forwardFailures
                    + " times on this request: "
                    + e),
            out);
      else scheduler.recompute(g);
    }
  }

  /** Runs one request's part of the step; if it throws, that request alone fails. */
  private boolean perRequest(CoreRequest r, Outputs out, Runnable work) {
    try {
      work.run();
      return true;
    } catch (RuntimeException | StackOverflowError | OutOfMemoryError e) {
      fail(r, e, out);
      return false;
    }
  }

  /** Removes a request that failed on its own; its news of this step are dropped. */
  private void fail(CoreRequest r, Throwable e, Outputs out) {
    Rejection why;
    if (e instanceof Rejection rejection) why = rejection;
    else if (e instanceof InvalidSamplingParamsException bad)
      why = Rejection.badRequest(bad.getMessage(), bad.param());
    else {
      log.warn("request {} failed in the engine; the others go on", r.id(), e);
      why = Rejection.internal("The engine failed on this request: " + e);
    }
    abort(r.id());
    out.fail(r, why);
  }

  // ------------------------------------------------------------------ adapters

  /** Makes LoRA adapter {@code id} (> 0) available to requests added with it; between steps. */
  public void registerAdapter(int id, LoraAdapter adapter) {
    runner.registerAdapter(id, adapter);
  }

  /**
   * Forgets adapter {@code id}.
   *
   * @throws IllegalStateException while a request in flight runs on it
   */
  public void removeAdapter(int id) {
    if (adapterInUse(id)) throw new IllegalStateException("adapter " + id + " is in use");
    runner.removeAdapter(id);
  }

  /** True while a request in flight (waiting or running) was added with adapter {@code id}. */
  public boolean adapterInUse(int id) {
    for (CoreRequest r : active.values()) if (r.request.adapterId() == id) return true;
    return false;
  }

  @Override
  public void close() {
    runner.close();
  }
}
